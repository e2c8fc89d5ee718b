#include "passes/pipeline_trace.h"

#include <memory>

#include "passes/pipeline_text.h"
#include "passes/tuning_pass.h"

namespace tandem::passes {

namespace {

// Records the passes of the outermost pipeline (depth 0) as they finish.
class TraceRecorder : public PassInstrument {
 public:
  explicit TraceRecorder(PassContext& context) : context_(context) {}

  void BeforePass(const Pass& pass, const ir::IRModule&, int depth) override {
    if (depth == 0 && pass.info().is_tuning) decisions_before_ = NumDecisions();
  }

  void AfterPass(const Pass& pass, const ir::IRModule&, const ir::IRModule&, double,
                 int depth) override {
    if (depth != 0) return;
    if (pass.info().is_tuning) {
      // A tuning pass that decided nothing (no applicable choice, or every candidate failed)
      // returned its input: nothing to replay.
      if (NumDecisions() > decisions_before_) {
        for (const ir::Instruction& instruction :
             context_.tuning->decisions().back().trace.instructions()) {
          trace.Append(instruction);
        }
      }
      return;
    }
    ir::Instruction instruction;
    instruction.kind = pass.name();
    instruction.attrs.Set("pass", PrintPipeline(pass));
    instruction.decision = ir::AttrValue(std::string("apply"));
    trace.Append(std::move(instruction));
  }

  ir::Trace trace;

 private:
  size_t NumDecisions() const { return context_.tuning ? context_.tuning->decisions().size() : 0; }
  PassContext& context_;
  size_t decisions_before_ = 0;
};

}  // namespace

RecordedRun RunPipelineRecorded(const Pass& pipeline, const ir::IRModule& module,
                                PassContext& context) {
  auto recorder = std::make_shared<TraceRecorder>(context);
  context.instruments.push_back(recorder);
  struct Remove {
    PassContext& context;
    ~Remove() { context.instruments.pop_back(); }
  } remove{context};
  ir::IRModule result = context.RunPipeline(pipeline, module);
  return {std::move(result), recorder->trace};
}

}  // namespace tandem::passes
