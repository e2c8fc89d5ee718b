// BestOf: a tuning pass whose result is never worse, up to the noise confirmation resolves, than
// what another chain of passes makes of the same module.
//
//   BestOf(share=0.5, alternative="TuneLayout(eval=[FuseOps]), TuneKernels", eval=[...])
//
// The eval passes are the primary search (in the `joint` pipeline: the nested search over layout,
// convolution algorithm, placement and kernels); `alternative` is pipeline text for a second chain
// (in `joint`: the chain of the `sequential` pipeline, each decision taken with the later ones at
// their defaults). Tune(candidate):
//   1. records one instruction {kind: BestOf, pass: the pass text, considered: "eval,alternative"}
//      on two copies of the candidate, with decision "alternative" on one and "eval" on the other;
//   2. expands the first with the alternative chain, under a budget share of `share` times the
//      trial budget left (less one measurement per branch whose result is not measured yet);
//   3. expands the second with the eval passes under everything the budget has left but those
//      final measurements; kernels the alternative tuned are in the database, so a TuneKernels
//      with skip_tuned=1 among the eval passes takes them instead of searching them again;
//   4. measures what is not measured yet, and records both first measurements ("measured");
//   5. decides between the two in the same interleaved confirmation rounds
//      (TuningPass::SelectConfirmed; recorded as "confirmed"): the preferred chain's result
//      (`prefer`, the eval passes' by default) is kept unless the other's is faster by more
//      than the session's minimum gain (or the preferred one failed). The `joint` pipeline
//      prefers its alternative, the sequential chain: the nested search's module replaces it
//      only when it is clearly faster, so that a placement that won its search by noise does not
//      make `joint` slower than `sequential`.
// The winning candidate's trace is this instruction followed by the winning chain's own
// instructions, so replay re-applies the chosen chain's decisions and measures nothing (this
// pass's own decision replays to the module unchanged). Two chains that make the same module
// are one finalist: nothing is confirmed and the eval passes' result is kept (it is the same
// module).
//
// Budget: with a trial budget of N, the alternative gets floor(share * (N - reserve)) and the eval
// passes what is left of N; together they never exceed N. Without a trial budget, each chain runs
// as it would alone. Counting: BestOf(eval=[U], alternative="V") evaluates |U| + |V|, plus at
// most two measurements of the chains' results. As an eval pass of a screening tuning pass, its
// screening form is that of its eval passes (the alternative is not screened).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "passes/pass_declaration.h"
#include "passes/pipeline_text.h"
#include "passes/tuning_pass.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

namespace {

constexpr const char* kEval = "eval";
constexpr const char* kAlternative = "alternative";

struct BestOfOptions {
  std::string alternative;
  double share = 0.5;
  std::string prefer = kEval;
};

// The alternative chain of `options`, parsed against `registry`; Error when it is missing or
// does not parse, or `share` is out of range.
PassPtr ParseAlternative(const BestOfOptions& options, const PassRegistry& registry) {
  if (options.share < 0 || options.share > 1) {
    throw ir::Error(fmt::format("BestOf: share={} must be between 0 and 1", options.share));
  }
  if (options.prefer != kEval && options.prefer != kAlternative) {
    throw ir::Error(fmt::format("BestOf: prefer=\"{}\" must be \"{}\" or \"{}\"", options.prefer,
                                kEval, kAlternative));
  }
  if (options.alternative.find_first_not_of(' ') == std::string::npos) {
    throw ir::Error(
        "BestOf: alternative=\"...\" must give the pipeline text of the alternative chain");
  }
  try {
    return ParsePipeline(options.alternative, registry);
  } catch (const ir::Error& e) {
    throw ir::Error(fmt::format("BestOf: alternative: {}", e.what()));
  }
}

class BestOf : public TuningPass {
 public:
  BestOf(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval, BestOfOptions options,
         PassPtr alternative)
      : TuningPass(std::move(info), std::move(arguments), std::move(eval)),
        options_(std::move(options)),
        alternative_(std::move(alternative)) {}

  std::vector<std::pair<std::string, PassPtr>> side_pipelines() const override {
    return {{kAlternative, alternative_}};
  }

  // The alternative chain runs on this pass's input, as the eval passes do.
  void Validate(const std::vector<std::string>& preceding) const override {
    TuningPass::Validate(preceding);
    std::vector<std::string> before = preceding;
    before.push_back(name());
    alternative_->Validate(before);
  }

  Candidate Tune(const Candidate& candidate, PassContext& context) const override {
    tuning::TuningSession& session = context.Tuning();
    // 1. Two copies of the candidate, each with this pass's instruction naming its chain.
    size_t index = candidate.trace.size();
    Candidate alternative = Branch(candidate, kAlternative);
    Candidate primary = Branch(candidate, kEval);
    bool primary_measured = !eval_passes().empty() && eval_passes().back()->ExpandsToMeasured();
    int64_t reserve = (primary_measured ? 0 : 1) + (alternative_->ExpandsToMeasured() ? 0 : 1);
    int64_t remaining = session.RemainingBudget();
    bool limited = remaining != std::numeric_limits<int64_t>::max();
    // 2. The alternative chain under its share.
    {
      auto share = static_cast<int64_t>(std::floor(
          options_.share * static_cast<double>(std::max<int64_t>(0, remaining - reserve))));
      tuning::BudgetShareScope scope(session, share, limited);
      alternative = alternative_->ExpandCandidate(std::move(alternative), context);
    }
    // 3. The eval passes under the rest (less the final measurements still needed).
    {
      int64_t needed = (primary_measured ? 0 : 1) + (alternative.result ? 0 : 1);
      int64_t rest = limited ? std::max<int64_t>(0, session.RemainingBudget() - needed) : 0;
      tuning::BudgetShareScope scope(session, rest, limited);
      primary = ExpandWithEvalPasses(std::move(primary), context);
    }
    // 4. Both measured; the first measurements recorded on both.
    std::vector<Candidate> candidates{std::move(primary), std::move(alternative)};
    EvaluateAndSelect(candidates, context);
    std::vector<std::string> measured;
    for (const Candidate& c : candidates) {
      const std::string& label = std::get<std::string>(*c.trace.instructions()[index].decision);
      measured.push_back(c.result && c.result->ok()
                             ? fmt::format("{}:{:.1f}us", label, c.result->median_seconds * 1e6)
                             : fmt::format("{}:failed", label));
    }
    for (Candidate& c : candidates) {
      c.trace.mutable_instructions()[index].attrs.Set("measured",
                                                      fmt::format("{}", fmt::join(measured, ",")));
    }
    // 5. Confirmed together; the preferred chain's result is kept within the minimum gain.
    std::vector<size_t> preference =
        options_.prefer == kEval ? std::vector<size_t>{0, 1} : std::vector<size_t>{1, 0};
    int64_t best = SelectConfirmed(candidates, index, context, /*screening=*/false, preference);
    if (best < 0) return candidate;
    return candidates[static_cast<size_t>(best)];
  }

  // The decision names the chain whose instructions follow it in the trace: they replay
  // themselves, so this one changes nothing.
  ir::IRModule ApplyDecision(const ir::IRModule& module, const ir::Instruction& instruction,
                             PassContext&) const override {
    const auto* decision = instruction.decision ? std::get_if<std::string>(&*instruction.decision)
                                                : static_cast<const std::string*>(nullptr);
    if (!decision || (*decision != kEval && *decision != kAlternative)) {
      throw ir::Error(
          "BestOf: the instruction's decision must be \"eval\" or \"alternative\" (the chain "
          "whose decisions follow it)");
    }
    return module;
  }

 private:
  // `candidate` with this pass's instruction deciding for `chain` appended.
  Candidate Branch(const Candidate& candidate, const std::string& chain) const {
    Candidate next = candidate;
    ir::Instruction instruction;
    instruction.kind = name();
    instruction.attrs.Set("pass", DecisionText());
    instruction.attrs.Set("considered", fmt::format("{},{}", kEval, kAlternative));
    instruction.decision = ir::AttrValue(chain);
    next.trace.Append(std::move(instruction));
    next.result.reset();
    return next;
  }

  BestOfOptions options_;
  PassPtr alternative_;
};

}  // namespace

void RegisterBestOf(PassRegistry& registry) {
  using Options = BestOfOptions;
  auto decl = std::make_shared<const PassDeclaration<Options>>(PassDeclaration<Options>{
      .name = "BestOf",
      .summary = "Run the eval passes and an alternative chain of passes on the same module and "
                 "keep the faster result, the two confirmed in the same measurement rounds (the "
                 "preferred chain's result unless the other's gains the minimum gain).",
      .required = {},
      .arguments = {{"alternative", &Options::alternative,
                     "pipeline text of the alternative chain (quoted; its strings escaped)"},
                    {"share", &Options::share,
                     "fraction of the trial budget left that the alternative chain may spend "
                     "(it runs first; the eval passes get the rest)"},
                    {"prefer", &Options::prefer,
                     "\"eval\" or \"alternative\": the chain whose result is kept unless the "
                     "other's is faster by the minimum gain"}}});
  // The alternative is parsed against the registry the pass is created from (tests register
  // their own passes), when the pass is created: a missing or malformed alternative, or a share
  // out of range, fails when the pipeline is made.
  const PassRegistry* from = &registry;
  PassDef def = decl->Def(
      /*is_tuning=*/true, /*takes_eval_passes=*/true,
      [decl, from](PassArguments args, std::vector<PassPtr> eval) -> PassPtr {
        Options options = decl->Parse(args);
        PassPtr alternative = ParseAlternative(options, *from);
        return std::make_shared<BestOf>(decl->Info(true), std::move(args), std::move(eval),
                                        std::move(options), std::move(alternative));
      });
  registry.Register(std::move(def));
}

}  // namespace tandem::passes
