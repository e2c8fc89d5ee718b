// Pass, PassContext and Sequential: every optimization in Tandem is an IRModule -> IRModule
// pass.
//
// A Pass is a small immutable value (held by PassPtr) with a PassInfo (its stable registered
// name and the passes it requires to have run before it), the arguments it was created with
// (printed in the pipeline text), and, for tuning passes, the eval passes it nests. There is no
// hidden gating: a pass placed in a sequence always runs. Before a Sequential runs, it checks
// that every required pass runs earlier, and reports a violation naming both passes.
//
// Passes never run each other directly: a pass (typically a tuning pass evaluating a candidate)
// runs a nested pipeline through PassContext::RunPipeline, which returns the transformed module
// as a value and applies the same instrumentation (timing, IR dumps, verification, crash
// reproducers) as the outer pipeline. The context holds configuration and instruments, never
// the module being transformed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/graph.h"
#include "ir/target.h"
#include "ir/trace.h"

namespace tandem::tuning {
class TuningSession;  // tuning/session/tuning_session.h: include it where a session is used
}  // namespace tandem::tuning

namespace tandem::passes {

class Pass;
class PassContext;
struct Candidate;  // passes/tuning_pass.h: a module being tuned, with its trace
using PassPtr = std::shared_ptr<const Pass>;

struct PassInfo {
  std::string name;                   // stable registered name, e.g. "FuseOps"
  std::vector<std::string> required;  // passes that must run before this one
  bool is_tuning = false;             // decides by measurement (see tuning passes)
};

// The arguments a pass was created with, in the order given (so the text form round-trips).
using PassArguments = std::vector<std::pair<std::string, ir::AttrValue>>;

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const PassInfo& info() const = 0;
  const std::string& name() const { return info().name; }
  // Transforms the module. Throws ir::Error on failure (the runner adds the pass name).
  virtual ir::IRModule Run(const ir::IRModule& module, PassContext& context) const = 0;

  const PassArguments& arguments() const { return arguments_; }
  // The passes this pass runs on what it produces (eval passes of a tuning pass, or the members
  // of a Sequential).
  virtual std::vector<PassPtr> nested() const { return {}; }
  // Pipelines this pass runs besides its nested passes, each under the name of the argument that
  // gives it as pipeline text (BestOf's alternative chain): PrintPipelineTree shows their
  // structure under that name.
  virtual std::vector<std::pair<std::string, PassPtr>> side_pipelines() const { return {}; }
  // Checks that the required passes of this pass (and of what it nests) run before them;
  // `preceding` names the passes that run before this one. Throws ir::Error naming both
  // passes on a violation.
  virtual void Validate(const std::vector<std::string>& preceding) const;
  // Whether this pass only groups its nested passes (Sequential): a group has no name of its own
  // in the pipeline text (it prints as its members), and is neither instrumented nor counted as
  // a pass that ran.
  virtual bool IsGroup() const { return false; }

  // How this pass takes part in tuning when it is an eval pass of a tuning pass, or a pass a
  // trace replays (defined in passes/tuning_pass.cc, beside Candidate). The defaults are those
  // of a heuristic pass; TuningPass and Sequential override them.
  //
  // Expands `candidate` (not failed) with this pass: a heuristic pass runs once and is recorded
  // as a one-choice instruction (decision "apply"); a tuning pass tunes the candidate; a group
  // expands it with each member in order.
  virtual Candidate ExpandCandidate(Candidate candidate, PassContext& context) const;
  // The screening form of this pass on `candidate` (not failed): a heuristic pass its one fixed
  // step, a tuning pass its Screen candidates, a group the screening of each member in turn.
  virtual std::vector<Candidate> ScreenCandidate(const Candidate& candidate,
                                                 PassContext& context) const;
  // Whether a candidate expanded with this pass carries its measurement (a tuning pass that
  // picks the fastest of measured candidates; a group whose last member does).
  virtual bool ExpandsToMeasured() const { return false; }
  // Re-applies what this pass recorded in `instruction` to `module` (ReplayTrace): a heuristic
  // pass runs again with PassContext::replaying pointing at the instruction; a tuning pass
  // applies the recorded decision; a group of one pass replays that pass.
  virtual ir::IRModule Replay(const ir::IRModule& module, const ir::Instruction& instruction,
                              PassContext& context) const;

 protected:
  Pass() = default;
  explicit Pass(PassArguments arguments) : arguments_(std::move(arguments)) {}
  // Typed access to arguments with a default.
  int64_t IntArgument(const std::string& key, int64_t fallback) const;
  double FloatArgument(const std::string& key, double fallback) const;
  std::string StringArgument(const std::string& key, const std::string& fallback) const;

 private:
  PassArguments arguments_;
};

// Observes passes as they run (timing, IR dumps, verification). Callbacks are called for every
// pass, including the ones run through nested pipelines (`depth` > 0 there).
class PassInstrument {
 public:
  virtual ~PassInstrument() = default;
  virtual void BeforePass(const Pass& pass, const ir::IRModule& module, int depth) {}
  virtual void AfterPass(const Pass& pass, const ir::IRModule& before, const ir::IRModule& after,
                         double seconds, int depth) {}
};

// Typed key/value configuration of a pipeline run (e.g. "fuse_ops.max_depth" = 8).
class PassConfig {
 public:
  void Set(const std::string& key, ir::AttrValue value) { values_.Set(key, std::move(value)); }
  bool Has(const std::string& key) const { return values_.Has(key); }
  int64_t GetInt(const std::string& key, int64_t fallback) const {
    return values_.GetInt(key, fallback);
  }
  double GetFloat(const std::string& key, double fallback) const {
    return values_.GetFloat(key, fallback);
  }
  std::string GetString(const std::string& key, const std::string& fallback) const {
    return values_.GetString(key, fallback);
  }
  const ir::Attrs& values() const { return values_; }

 private:
  ir::Attrs values_;
};

class PassContext {
 public:
  ir::Target target;
  uint64_t seed = 0;
  PassConfig config;
  std::vector<std::shared_ptr<PassInstrument>> instruments;
  // Runs ir::Verify after every pass; a failure names the pass that broke the invariant.
  bool verify_each = false;
  // Where a failing pass writes its crash reproducer (the input IR text and the pipeline
  // string); empty: no reproducers.
  std::string reproducer_dir;
  // The builder, runner, database, budget and random state shared by every tuning pass of this
  // run. Null until a tuning pass needs it; Tuning() then makes a default session (in-memory
  // database, local builder, process runner) from `target` and `seed`.
  std::shared_ptr<tuning::TuningSession> tuning;
  tuning::TuningSession& Tuning();

  // Exact replay of what a heuristic pass took from the tuning database (Legalize taking the
  // best recorded kernel schedules). Such a pass stores what it took in `database_choice` (an
  // instruction of its kind); RunPipelineRecorded keeps it in the pipeline trace in place of a
  // plain "apply". ReplayTrace points `replaying` at that instruction while the pass runs again,
  // and the pass applies exactly that, whatever the database holds by then.
  std::optional<ir::Instruction> database_choice;
  const ir::Instruction* replaying = nullptr;

  // Runs `pipeline` on `module` with this context's instruments and returns the result. The
  // pipeline is validated first (required passes must run earlier). A failure is an ir::Error
  // naming the pass (and, with reproducer_dir set, the reproducer file).
  ir::IRModule RunPipeline(const Pass& pipeline, const ir::IRModule& module);
  // Runs one pass with instrumentation (used by Sequential for its members).
  ir::IRModule RunPass(const Pass& pass, const ir::IRModule& module);

  int depth() const { return depth_; }

 private:
  int depth_ = -1;
  std::vector<std::string> preceding_;  // passes already run in the enclosing pipelines
};

// Runs its members in order.
class Sequential : public Pass {
 public:
  explicit Sequential(std::vector<PassPtr> passes) : passes_(std::move(passes)) {}
  const PassInfo& info() const override;
  ir::IRModule Run(const ir::IRModule& module, PassContext& context) const override;
  std::vector<PassPtr> nested() const override { return passes_; }
  void Validate(const std::vector<std::string>& preceding) const override;
  bool IsGroup() const override { return true; }
  Candidate ExpandCandidate(Candidate candidate, PassContext& context) const override;
  std::vector<Candidate> ScreenCandidate(const Candidate& candidate,
                                         PassContext& context) const override;
  bool ExpandsToMeasured() const override;
  ir::IRModule Replay(const ir::IRModule& module, const ir::Instruction& instruction,
                      PassContext& context) const override;
  const std::vector<PassPtr>& passes() const { return passes_; }

 private:
  std::vector<PassPtr> passes_;
};

PassPtr MakeSequential(std::vector<PassPtr> passes);

// A pass defined by a function, for heuristic passes with no state beyond their arguments.
class FunctionPass : public Pass {
 public:
  using Function =
      std::function<ir::IRModule(const ir::IRModule&, PassContext&, const PassArguments&)>;
  FunctionPass(PassInfo info, PassArguments arguments, Function function)
      : Pass(std::move(arguments)), info_(std::move(info)), function_(std::move(function)) {}
  const PassInfo& info() const override { return info_; }
  ir::IRModule Run(const ir::IRModule& module, PassContext& context) const override {
    return function_(module, context, arguments());
  }

 private:
  PassInfo info_;
  Function function_;
};

}  // namespace tandem::passes
