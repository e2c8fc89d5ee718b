#include "passes/tuning_pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "ir/error.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"

namespace tandem::passes {

namespace {

constexpr const char* kPassAttr = "pass";
constexpr const char* kConsideredAttr = "considered";
constexpr const char* kHeuristicDecision = "apply";

// Runs one eval pass on a candidate (a failed candidate stays as it is).
Candidate ExpandWith(Candidate candidate, const Pass& eval, PassContext& context) {
  if (candidate.failed()) return candidate;
  return eval.ExpandCandidate(std::move(candidate), context);
}

// The screening form of one eval pass on a candidate (a failed candidate stays as it is).
std::vector<Candidate> ScreenWith(const Candidate& candidate, const Pass& eval,
                                  PassContext& context) {
  if (candidate.failed()) return {candidate};
  return eval.ScreenCandidate(candidate, context);
}

bool NestsTuning(const std::vector<PassPtr>& passes) {
  for (const PassPtr& pass : passes) {
    if (pass->info().is_tuning || NestsTuning(pass->nested())) return true;
  }
  return false;
}

// Whether expanding with `passes` leaves the candidate measured: the last pass is a tuning pass
// that returns a measured candidate (through sequences).
bool EndsMeasured(const std::vector<PassPtr>& passes) {
  return !passes.empty() && passes.back()->ExpandsToMeasured();
}

}  // namespace

Candidate Candidate::Start(const ir::IRModule& module) {
  return Candidate{module, ir::Trace(), module, std::nullopt};
}

// The tuning hooks of Pass (passes/pass.h): a heuristic pass is one fixed step.
Candidate Pass::ExpandCandidate(Candidate candidate, PassContext& context) const {
  // A heuristic pass: one fixed step, recorded as a one-choice instruction.
  ir::Instruction instruction;
  instruction.kind = name();
  instruction.attrs.Set(kPassAttr, PrintPipeline(*this));
  instruction.decision = ir::AttrValue(std::string(kHeuristicDecision));
  candidate.trace.Append(std::move(instruction));
  candidate.result.reset();
  try {
    candidate.output = context.RunPass(*this, candidate.output);
  } catch (const ir::Error& e) {
    candidate.result =
        tuning::MeasureResult::Failure(fmt::format("eval pass {} failed: {}", name(), e.what()));
  }
  return candidate;
}

std::vector<Candidate> Pass::ScreenCandidate(const Candidate& candidate,
                                             PassContext& context) const {
  return {ExpandCandidate(candidate, context)};
}

ir::IRModule Pass::Replay(const ir::IRModule& module, const ir::Instruction& instruction,
                          PassContext& context) const {
  // A heuristic pass; one that took something from the database applies what it took.
  context.replaying = &instruction;
  struct Reset {
    PassContext& context;
    ~Reset() { context.replaying = nullptr; }
  } reset{context};
  return context.RunPass(*this, module);
}

Candidate Sequential::ExpandCandidate(Candidate candidate, PassContext& context) const {
  for (const PassPtr& member : passes_) {
    candidate = ExpandWith(std::move(candidate), *member, context);
  }
  return candidate;
}

std::vector<Candidate> Sequential::ScreenCandidate(const Candidate& candidate,
                                                   PassContext& context) const {
  std::vector<Candidate> current{candidate};
  for (const PassPtr& member : passes_) {
    std::vector<Candidate> next;
    for (const Candidate& c : current) {
      for (Candidate& screened : ScreenWith(c, *member, context))
        next.push_back(std::move(screened));
    }
    current = std::move(next);
  }
  return current;
}

bool Sequential::ExpandsToMeasured() const {
  return EndsMeasured(passes_);
}

ir::IRModule Sequential::Replay(const ir::IRModule& module, const ir::Instruction& instruction,
                                PassContext& context) const {
  // A recorded pass text parses into a sequence of the one pass that recorded it.
  if (passes_.size() == 1) return passes_[0]->Replay(module, instruction, context);
  return Pass::Replay(module, instruction, context);
}

Candidate TuningPass::ExpandCandidate(Candidate candidate, PassContext& context) const {
  return Tune(candidate, context);
}

std::vector<Candidate> TuningPass::ScreenCandidate(const Candidate& candidate,
                                                   PassContext& context) const {
  return Screen(candidate, context);
}

ir::IRModule TuningPass::Replay(const ir::IRModule& module, const ir::Instruction& instruction,
                                PassContext& context) const {
  return ApplyDecision(module, instruction, context);
}

tuning::SearchStrategy TuningPass::Strategy() const {
  tuning::SearchStrategy strategy;
  strategy.kind = tuning::SearchStrategy::ParseKind(search_.strategy);
  strategy.sample = search_.sample;
  strategy.max_candidates = search_.max_candidates;
  return strategy;
}

std::string TuningPass::DecisionText() const {
  std::string text = name();
  if (arguments().empty()) return text;
  // The pass text of this pass without eval passes: reuse the canonical printer on a pass that
  // has only the arguments.
  FunctionPass plain(info(), arguments(),
                     [](const ir::IRModule& m, PassContext&, const PassArguments&) { return m; });
  return PrintPipeline(plain);
}

tuning::Knob TuningPass::MakeKnob(const ir::IRModule&, PassContext&) const {
  throw ir::Error(fmt::format("tuning pass {} defines no knob and must override Tune", name()));
}

ir::IRModule TuningPass::ApplyDecision(const ir::IRModule& module,
                                       const ir::Instruction& instruction,
                                       PassContext& context) const {
  if (!instruction.decision || !std::holds_alternative<std::string>(*instruction.decision)) {
    throw ir::Error(fmt::format("{}: the instruction has no choice as its decision", name()));
  }
  return MakeKnob(module, context).Apply(module, std::get<std::string>(*instruction.decision));
}

bool TuningPass::EvalNestsTuning() const {
  return NestsTuning(eval_);
}

std::vector<Candidate> TuningPass::Screen(const Candidate& candidate, PassContext& context) const {
  return ScreenWithEvalPasses(candidate, context);
}

std::vector<Candidate> TuningPass::ScreenWithEvalPasses(const Candidate& candidate,
                                                        PassContext& context) const {
  std::vector<Candidate> current{candidate};
  for (const PassPtr& eval : eval_) {
    std::vector<Candidate> next;
    for (const Candidate& c : current) {
      for (Candidate& screened : ScreenWith(c, *eval, context)) next.push_back(std::move(screened));
    }
    current = std::move(next);
  }
  return current;
}

Candidate TuningPass::ExpandWithEvalPasses(Candidate candidate, PassContext& context,
                                           BudgetSplit split) const {
  tuning::TuningSession& session = context.Tuning();
  int64_t remaining = session.RemainingBudget();
  bool share = split.candidates_left > 0 && NestsTuning(eval_) &&
               remaining != std::numeric_limits<int64_t>::max();
  int64_t reserved = EndsMeasured(eval_) ? 0 : split.reserved;
  tuning::BudgetShareScope scope(
      session, share ? std::max<int64_t>(0, remaining - reserved) / split.candidates_left : 0,
      share);
  for (const PassPtr& eval : eval_) candidate = ExpandWith(std::move(candidate), *eval, context);
  return candidate;
}

int64_t TuningPass::EvaluateAndSelect(std::vector<Candidate>& candidates,
                                      PassContext& context) const {
  std::vector<tuning::EvaluationRequest> requests;
  std::vector<size_t> pending;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].result) continue;
    requests.push_back({candidates[i].output, candidates[i].trace});
    pending.push_back(i);
  }
  if (!requests.empty()) {
    std::vector<tuning::MeasureResult> results =
        context.Tuning().EvaluateModules(requests, DecisionText());
    for (size_t k = 0; k < pending.size(); ++k) candidates[pending[k]].result = results[k];
  }
  int64_t best = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& r = candidates[i].result;
    if (!r || !r->ok()) continue;
    if (best < 0 ||
        r->median_seconds < candidates[static_cast<size_t>(best)].result->median_seconds) {
      best = static_cast<int64_t>(i);
    }
  }
  return best;
}

int64_t TuningPass::SelectConfirmed(std::vector<Candidate>& candidates, size_t instruction_index,
                                    PassContext& context, bool screening,
                                    const std::vector<size_t>& preference) const {
  int64_t best = EvaluateAndSelect(candidates, context);
  if (best < 0) return best;
  tuning::TuningSession& session = context.Tuning();
  const tuning::TuningSession::Options& options = session.options();
  double margin = screening ? std::max(0.5, 2 * options.confirm_margin) : options.confirm_margin;
  double limit = candidates[static_cast<size_t>(best)].result->median_seconds * (1 + margin);
  std::vector<size_t> finalists;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& r = candidates[i].result;
    if (r && r->ok() && r->median_seconds <= limit) finalists.push_back(i);
  }
  std::stable_sort(finalists.begin(), finalists.end(), [&](size_t a, size_t b) {
    return candidates[a].result->median_seconds < candidates[b].result->median_seconds;
  });
  // One finalist per distinct module (two choices often give the same module).
  std::vector<uint64_t> seen;
  std::erase_if(finalists, [&](size_t i) {
    uint64_t hash = ir::StructuralHash(candidates[i].output);
    if (std::find(seen.begin(), seen.end(), hash) != seen.end()) return true;
    seen.push_back(hash);
    return false;
  });
  if (finalists.size() > static_cast<size_t>(std::max(options.max_finalists, 1))) {
    finalists.resize(static_cast<size_t>(std::max(options.max_finalists, 1)));
  }
  seen.resize(finalists.size());  // seen[k]: the hash of finalists[k]'s module
  // The most preferred candidate is a finalist of a decision whatever its first measurement
  // read: a slow spell over that one measurement would otherwise drop the choice that the
  // minimum gain protects (the no-change choice, BestOf's preferred chain), and the change
  // would win unconfirmed.
  auto rank = [&](size_t i) { return preference.empty() ? i : preference.at(i); };
  if (!screening) {
    std::optional<size_t> preferred;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& r = candidates[i].result;
      if (r && r->ok() && (!preferred || rank(i) < rank(*preferred))) preferred = i;
    }
    if (preferred && std::find(finalists.begin(), finalists.end(), *preferred) == finalists.end() &&
        std::find(seen.begin(), seen.end(), ir::StructuralHash(candidates[*preferred].output)) ==
            seen.end()) {
      if (finalists.size() >= static_cast<size_t>(std::max(options.max_finalists, 2))) {
        finalists.pop_back();
      }
      finalists.push_back(*preferred);
    }
  }
  if (finalists.size() < 2) return best;
  std::vector<tuning::EvaluationRequest> requests;
  for (size_t i : finalists) requests.push_back({candidates[i].output, candidates[i].trace});
  std::vector<tuning::MeasureResult> confirmed = session.ConfirmModules(requests, DecisionText());
  if (confirmed.empty()) return best;
  // Every finalist failing its confirmation (a flaky crash, a fixture without it) leaves the
  // first measurements.
  if (std::none_of(confirmed.begin(), confirmed.end(),
                   [](const tuning::MeasureResult& r) { return r.ok(); })) {
    return best;
  }
  std::vector<std::string> texts;
  for (size_t k = 0; k < finalists.size(); ++k) {
    Candidate& c = candidates[finalists[k]];
    std::string label = fmt::format("candidate {}", finalists[k]);
    if (instruction_index < c.trace.size()) {
      const ir::Instruction& instruction = c.trace.instructions()[instruction_index];
      if (instruction.attrs.Has("choice")) {
        label = instruction.attrs.GetString("choice");
      } else if (instruction.decision &&
                 std::holds_alternative<std::string>(*instruction.decision) &&
                 std::get<std::string>(*instruction.decision).size() <= 40) {
        label = std::get<std::string>(*instruction.decision);
      }
    }
    texts.push_back(confirmed[k].ok()
                        ? fmt::format("{}:{:.1f}us", label, confirmed[k].median_seconds * 1e6)
                        : fmt::format("{}:failed", label));
    c.result = std::move(confirmed[k]);
  }
  best = -1;
  for (size_t i : finalists) {
    Candidate& c = candidates[i];
    if (!screening && instruction_index < c.trace.size()) {
      c.trace.mutable_instructions()[instruction_index].attrs.Set(
          "confirmed", fmt::format("{}", fmt::join(texts, ",")));
    }
    if (!c.result->ok()) continue;
    if (best < 0 ||
        c.result->median_seconds < candidates[static_cast<size_t>(best)].result->median_seconds) {
      best = static_cast<int64_t>(i);
    }
  }
  // A change has to pay for itself by more than the noise (Options::minimum_gain, in the
  // quietest rounds and round by round: TuningSession::ConfirmedGain): of the finalists that the
  // fastest does not beat by that much, the most preferred is taken.
  if (!screening) {
    const tuning::MeasureResult& fastest = *candidates[static_cast<size_t>(best)].result;
    for (size_t i : finalists) {
      const auto& r = candidates[i].result;
      if (!r->ok() || tuning::TuningSession::ConfirmedGain(fastest, *r, options.confirm_rounds,
                                                           options.minimum_gain)) {
        continue;
      }
      if (rank(i) < rank(static_cast<size_t>(best))) best = static_cast<int64_t>(i);
    }
  }
  return best;
}

Candidate TuningPass::TuneChoices(const Candidate& candidate, std::vector<Choice> choices,
                                  PassContext& context) const {
  int64_t total = static_cast<int64_t>(choices.size());
  std::vector<Candidate> applied;
  for (Choice& choice : choices) {
    Candidate next = candidate;
    next.trace.Append(std::move(choice.instruction));
    next.result.reset();
    try {
      next.output = choice.apply(candidate.output);
    } catch (const ir::Error& e) {
      next.result = tuning::MeasureResult::Failure(
          fmt::format("{} choice {} failed: {}", name(), choice.label, e.what()));
    }
    applied.push_back(std::move(next));
  }
  int64_t keep = search_.keep;
  if (keep > 0 && total > keep && NestsTuning(eval_)) {
    return ScreenAndTune(candidate, std::move(applied), candidate.trace.size(), keep, context);
  }
  std::vector<Candidate> candidates;
  for (Candidate& next : applied) {
    candidates.push_back(ExpandWithEvalPasses(
        std::move(next), context,
        {total - static_cast<int64_t>(candidates.size()), /*reserved=*/total}));
  }
  int64_t best = SelectConfirmed(candidates, candidate.trace.size(), context);
  if (best < 0) return candidate;
  return candidates[static_cast<size_t>(best)];
}

Candidate TuningPass::ScreenAndTune(const Candidate& candidate, std::vector<Candidate> applied,
                                    size_t instruction_index, int64_t keep,
                                    PassContext& context) const {
  // 1. Every choice in its screening form, measured in one batch.
  std::vector<Candidate> screened;
  std::vector<size_t> choice_of;
  for (size_t c = 0; c < applied.size(); ++c) {
    for (Candidate& s : ScreenWithEvalPasses(applied[c], context)) {
      screened.push_back(std::move(s));
      choice_of.push_back(c);
    }
  }
  SelectConfirmed(screened, instruction_index, context, /*screening=*/true);
  constexpr double kUnmeasured = std::numeric_limits<double>::infinity();
  std::vector<double> score(applied.size(), kUnmeasured);
  for (size_t k = 0; k < screened.size(); ++k) {
    const auto& r = screened[k].result;
    if (r && r->ok()) score[choice_of[k]] = std::min(score[choice_of[k]], r->median_seconds);
  }
  // 2. The `keep` best-scoring choices (measured ones only), best first.
  std::vector<size_t> order;
  for (size_t c = 0; c < applied.size(); ++c) {
    if (score[c] != kUnmeasured) order.push_back(c);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] < score[b]; });
  if (static_cast<int64_t>(order.size()) > keep) order.resize(static_cast<size_t>(keep));
  // Recorded on the choice's instruction in every candidate that carries it.
  std::vector<std::string> screened_text, kept_text;
  for (size_t c = 0; c < applied.size(); ++c) {
    const ir::Instruction& instruction = applied[c].trace.instructions()[instruction_index];
    std::string label =
        instruction.decision && std::holds_alternative<std::string>(*instruction.decision)
            ? std::get<std::string>(*instruction.decision)
            : fmt::format("choice {}", c);
    if (label.size() > 40) label = fmt::format("choice {}", c);
    screened_text.push_back(score[c] == kUnmeasured
                                ? fmt::format("{}:failed", label)
                                : fmt::format("{}:{:.1f}us", label, score[c] * 1e6));
    if (std::find(order.begin(), order.end(), c) != order.end()) kept_text.push_back(label);
  }
  auto annotate = [&](Candidate& c) {
    ir::Instruction& instruction = c.trace.mutable_instructions()[instruction_index];
    instruction.attrs.Set("screened", fmt::format("{}", fmt::join(screened_text, ",")));
    instruction.attrs.Set("kept", fmt::format("{}", fmt::join(kept_text, ",")));
  };
  for (Candidate& s : screened) annotate(s);
  // 3. The survivors expanded with the full eval passes under the budget split among them; the
  // best of everything measured wins (a tie goes to a tuned candidate: they come first).
  std::vector<Candidate> candidates;
  int64_t survivors = static_cast<int64_t>(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    Candidate next = applied[order[k]];
    annotate(next);
    candidates.push_back(ExpandWithEvalPasses(
        std::move(next), context, {survivors - static_cast<int64_t>(k), /*reserved=*/survivors}));
  }
  // Preferred in the order of the choices, each tuned before screened.
  std::vector<size_t> preference;
  for (size_t k = 0; k < order.size(); ++k) preference.push_back(2 * order[k]);
  for (size_t k = 0; k < screened.size(); ++k) preference.push_back(2 * choice_of[k] + 1);
  for (Candidate& s : screened) candidates.push_back(std::move(s));
  int64_t best =
      SelectConfirmed(candidates, instruction_index, context, /*screening=*/false, preference);
  if (best < 0) return candidate;
  return candidates[static_cast<size_t>(best)];
}

Candidate TuningPass::Tune(const Candidate& candidate, PassContext& context) const {
  tuning::Knob knob = MakeKnob(candidate.output, context);
  std::vector<std::string> considered =
      Strategy().Select(knob.ApplicableChoices(candidate.output), context.Tuning().random());
  std::string pass_text = DecisionText();
  std::vector<Choice> choices;
  for (const std::string& choice : considered) {
    ir::Instruction instruction;
    instruction.kind = name();
    instruction.attrs.Set(kPassAttr, pass_text);
    instruction.attrs.Set(kConsideredAttr, fmt::format("{}", fmt::join(considered, ",")));
    instruction.decision = ir::AttrValue(choice);
    choices.push_back({choice, std::move(instruction),
                       [&knob, choice](const ir::IRModule& m) { return knob.Apply(m, choice); }});
  }
  return TuneChoices(candidate, std::move(choices), context);
}

ir::IRModule TuningPass::Run(const ir::IRModule& module, PassContext& context) const {
  tuning::TuningSession& session = context.Tuning();
  session.EnsureReference(module);
  Candidate best = Tune(Candidate::Start(module), context);
  // No decision: no applicable choice, or every candidate failed.
  if (best.trace.empty()) return module;
  tuning::TuningDecision decision;
  decision.pass = PrintPipeline(*this);
  decision.input = module;
  decision.trace = best.trace;
  decision.result =
      best.result ? *best.result : tuning::MeasureResult::Failure("not measured end to end");
  session.RecordDecision(std::move(decision));
  return best.output;
}

ir::IRModule ReplayTrace(const ir::IRModule& input, const ir::Trace& trace, PassContext& context,
                         const PassRegistry& registry) {
  ir::IRModule module = input;
  const auto& instructions = trace.instructions();
  for (size_t i = 0; i < instructions.size(); ++i) {
    const ir::Instruction& instruction = instructions[i];
    try {
      if (!instruction.attrs.Has(kPassAttr)) {
        throw ir::Error("the instruction does not name the pass that recorded it");
      }
      PassPtr parsed = ParsePipeline(instruction.attrs.GetString(kPassAttr, ""), registry);
      module = parsed->Replay(module, instruction, context);
    } catch (const ir::Error& e) {
      throw ir::Error(
          fmt::format("replaying instruction {} ({}): {}", i, instruction.kind, e.what()));
    }
  }
  return module;
}

}  // namespace tandem::passes
