// TuningPass: a pass that decides by measurement, and the replay of its decisions.
//
// A tuning pass is an ordinary Pass (IRModule -> IRModule) that, in Run, tunes a candidate made
// from its input and returns the best candidate's module. The unit of work is a Candidate: the
// module tuning started from, the trace of decisions taken since, the resulting module and,
// once evaluated, its measurement.
//
// Tune(candidate) does, for the default one-knob pass:
//   1. build the pass's Knob for the candidate's module and pick the choices to evaluate (the
//      pass's search strategy; random picks come from the session's random state and are
//      recorded in the instruction);
//   2. for each choice: apply it and record an Instruction {kind: pass name, attrs: {pass: the
//      pass text, considered: [...]}, decision: choice}, then expand the candidate with each eval
//      pass in order, depth first: a heuristic eval pass runs once and is recorded as a
//      one-choice instruction (decision "apply"), a tuning eval pass tunes the candidate and
//      returns its best, already measured;
//   3. evaluate the candidates that have no measurement yet (builder, runner, database: see
//      tuning::TuningSession), and return the fastest.
// So T(eval=[U]) evaluates |T|·|U| candidates, T(eval=[U, V]) |T|·(|U|+|V|), a heuristic eval
// pass adds none, and Sequential([T, U]) |T|+|U|. A candidate whose transformation, build or
// run fails is a failed value, never an exception; when every candidate fails the pass returns
// its input unchanged.
//
// Screening (successive halving with one round), for a pass with keep=k > 0 whose eval passes
// nest tuning passes and that has more than k choices: expanding every choice with nested tuning
// passes splits the budget so thinly that none of them is tuned well. So every choice is first
// measured in its screening form: the eval passes with each nested tuning pass replaced by its
// Screen candidates (default: the pass skipped; TuneBackendPlacement: nothing placed and
// everything each backend takes, because layout and placement interact). A choice scores the
// best of its screening candidates; only the k best-scoring choices are expanded with the full
// eval passes, under the budget split among them, and the best of every measured candidate
// (screening candidates included) wins. T(keep=k, eval=[U]) evaluates |T|·|screen(U)| + k·|U|.
// The choice's instruction records the screening latencies ("screened") and the survivors
// ("kept"), so a replay, which re-applies only the decisions, stays exact.
//
// Confirmation: candidates measured minutes apart on a shared machine differ by more than
// their real difference (slow spells of 20-30% are common), so a decision between close
// candidates would follow the noise. The finalists of every decision are re-measured together,
// interleaved, and the decision is taken on that measurement (SelectConfirmed). Screening
// batches are confirmed too, with a wider margin: a slow spell during the one-shot screening
// would otherwise drop the right choice before it is ever tuned.
//
// ReplayTrace re-applies a trace's decisions to the module tuning started from, without
// measuring anything, and gives the same module (structurally equal).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/trace.h"
#include "passes/pass.h"
#include "passes/pass_declaration.h"
#include "passes/pass_registry.h"
#include "tuning/measure/measure.h"
#include "tuning/session/knob.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

struct Candidate {
  ir::IRModule input;                           // where tuning started
  ir::Trace trace;                              // decisions since `input`
  ir::IRModule output;                          // `input` with the decisions applied
  std::optional<tuning::MeasureResult> result;  // set once evaluated (ok or failed)

  // A fresh candidate: no decisions yet.
  static Candidate Start(const ir::IRModule& module);
  bool failed() const { return result && !result->ok(); }
};

// How a tuning pass shares its budget among the candidates it expands: `candidates_left` is
// this candidate and the ones the caller will expand after it, `reserved` the measurements
// the caller needs after expanding (typically one per candidate, measured together at the
// end).
struct BudgetSplit {
  int64_t candidates_left = 0;
  int64_t reserved = 0;
};

// The search arguments of a one-knob tuning pass (SearchArguments). The options struct of such a
// pass derives from it, so that its declaration can name these members.
struct SearchOptions {
  std::string strategy = "exhaustive";  // exhaustive or random
  int64_t sample = 0;                   // random strategy: how many choices (0: all)
  int64_t max_candidates = 0;           // evaluate at most this many (0: no cap)
  int64_t keep = 0;                     // screen first and tune only the best `keep` (0: all)
};

// The declared search arguments (strategy, sample, max_candidates, keep) of a tuning pass whose
// options derive from SearchOptions.
template <typename Options>
std::vector<PassOption<Options>> SearchArguments() {
  static_assert(std::is_base_of_v<SearchOptions, Options>);
  return {
      {"strategy", &SearchOptions::strategy, "which choices to evaluate: exhaustive or random"},
      {"sample", &SearchOptions::sample, "random strategy: how many choices (0: all)"},
      {"max_candidates", &SearchOptions::max_candidates, "evaluate at most this many (0: no cap)"},
      {"keep", &SearchOptions::keep,
       "when the eval passes nest tuning passes: screen every choice cheaply first and tune only "
       "the best `keep` (0: tune every choice)"},
  };
}

class TuningPass : public Pass {
 public:
  const PassInfo& info() const override { return info_; }
  ir::IRModule Run(const ir::IRModule& module, PassContext& context) const override;
  std::vector<PassPtr> nested() const override { return eval_; }
  Candidate ExpandCandidate(Candidate candidate, PassContext& context) const override;
  std::vector<Candidate> ScreenCandidate(const Candidate& candidate,
                                         PassContext& context) const override;
  bool ExpandsToMeasured() const override { return MeasuresItsResult(); }
  ir::IRModule Replay(const ir::IRModule& module, const ir::Instruction& instruction,
                      PassContext& context) const override;
  const std::vector<PassPtr>& eval_passes() const { return eval_; }

  // Tunes `candidate` and returns the best candidate extending its trace, evaluated (see the
  // file comment). Passes that are not one-knob passes override this.
  virtual Candidate Tune(const Candidate& candidate, PassContext& context) const;

  // The cheap forms of this pass's result that screening measures to rank candidates (see the
  // file comment); each is `candidate` with what it applied recorded in its trace. The default
  // skips this pass's decision and applies the screening form of its eval passes.
  virtual std::vector<Candidate> Screen(const Candidate& candidate, PassContext& context) const;

  // Whether the candidate Tune returns carries its measurement (true for passes that pick the
  // fastest of measured candidates; TuneKernels returns its lowered module unmeasured). Budget
  // splitting reserves measurements only for candidates that will still need one.
  virtual bool MeasuresItsResult() const { return true; }

  // The knob this pass decides for `module` (one-knob passes).
  virtual tuning::Knob MakeKnob(const ir::IRModule& module, PassContext& context) const;
  // Re-applies a decision this pass recorded (replay). The default applies the knob's choice.
  virtual ir::IRModule ApplyDecision(const ir::IRModule& module, const ir::Instruction& instruction,
                                     PassContext& context) const;

  // The pass's text without its eval passes (what an instruction records to be replayable).
  std::string DecisionText() const;

 protected:
  // `info` and `arguments` as declared and given (passes/pass_declaration.h); `search`: the
  // pass's search options (strategy, sample, max_candidates, keep), the defaults for a pass
  // without them.
  TuningPass(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval,
             SearchOptions search = {})
      : Pass(std::move(arguments)),
        info_(std::move(info)),
        eval_(std::move(eval)),
        search_(std::move(search)) {}
  // The search strategy from the search options strategy="exhaustive"|"random", sample=k,
  // max_candidates=n.
  tuning::SearchStrategy Strategy() const;
  // Expands a candidate with every eval pass in order (step 2 of the file comment). With
  // split.candidates_left > 0 and a limited budget, the nested tuning passes run under an equal
  // share of what is left after the reserve: the budget is shared down the nesting instead of
  // going to whichever candidate is expanded first.
  Candidate ExpandWithEvalPasses(Candidate candidate, PassContext& context,
                                 BudgetSplit split = {}) const;
  // Whether some eval pass is (or nests) a tuning pass.
  bool EvalNestsTuning() const;
  // The screening form of the eval passes applied to `candidate`: heuristic eval passes as in
  // ExpandWithEvalPasses, each tuning eval pass replaced by its Screen candidates.
  std::vector<Candidate> ScreenWithEvalPasses(const Candidate& candidate,
                                              PassContext& context) const;
  // One choice of a tuning pass: the instruction it records (kind, pass text, decision; the
  // caller sets them) and how it transforms the module.
  struct Choice {
    std::string label;  // for failure messages
    ir::Instruction instruction;
    std::function<ir::IRModule(const ir::IRModule&)> apply;
  };
  // Makes one candidate per choice from `candidate` (a choice that throws is a failed
  // candidate), expands each with the eval passes under an even share of the budget (after
  // screening, when keep=k applies: see the file comment), evaluates them and returns the best;
  // `candidate` itself when every one failed.
  Candidate TuneChoices(const Candidate& candidate, std::vector<Choice> choices,
                        PassContext& context) const;
  // Evaluates the candidates without a result and returns the index of the best one (-1 when
  // every candidate failed).
  int64_t EvaluateAndSelect(std::vector<Candidate>& candidates, PassContext& context) const;
  // EvaluateAndSelect for a decision, confirmed: the finalists (the candidates within the
  // session's confirm_margin of the best, at most max_finalists of them) are re-measured
  // together (TuningSession::ConfirmModules) and the fastest in that measurement wins, unless a
  // more preferred finalist is within the session's minimum_gain of it (in its quietest round or
  // round by round: TuningSession::ConfirmedGain): then the most preferred such one wins.
  // `preference` ranks the candidates (lower first; empty: in their order, which for a pass's
  // choices puts its no-change choice first and simpler changes before the more intricate ones,
  // such as placing everything on a library before a mixed placement). Their results become the
  // confirmed ones, and every finalist's instruction at `instruction_index` records them
  // ("confirmed"), so the trace says why the winner won. For a screening batch
  // (`screening`), whose one-shot measurements decide what is tuned at all, the margin is
  // doubled (at least 50%) and nothing is recorded: the screened scores are.
  int64_t SelectConfirmed(std::vector<Candidate>& candidates, size_t instruction_index,
                          PassContext& context, bool screening = false,
                          const std::vector<size_t>& preference = {}) const;

 private:
  // TuneChoices with screening: `applied` holds one candidate per choice (its instruction at
  // trace index `instruction_index`); keeps the `keep` best-screened ones.
  Candidate ScreenAndTune(const Candidate& candidate, std::vector<Candidate> applied,
                          size_t instruction_index, int64_t keep, PassContext& context) const;

  PassInfo info_;
  std::vector<PassPtr> eval_;
  SearchOptions search_;
};

// Re-applies the decisions of `trace` to `input` (the module tuning started from). Each
// instruction names the pass that recorded it; passes are created from `registry`. Errors name
// the instruction index and pass.
ir::IRModule ReplayTrace(const ir::IRModule& input, const ir::Trace& trace, PassContext& context,
                         const PassRegistry& registry = PassRegistry::Global());

}  // namespace tandem::passes
