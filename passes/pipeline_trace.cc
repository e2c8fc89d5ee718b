#include "passes/pipeline_trace.h"

#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/error.h"
#include "ir/file_read.h"
#include "ir/json_depth.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/tuning_pass.h"
#include "tuning/database/database.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

namespace {

// Records the passes of the outermost pipeline (depth 0) as they finish.
class TraceRecorder : public PassInstrument {
 public:
  explicit TraceRecorder(PassContext& context) : context_(context) {}

  void BeforePass(const Pass& pass, const ir::IRModule&, int depth) override {
    if (depth != 0) return;
    if (pass.info().is_tuning) decisions_before_ = NumDecisions();
    context_.database_choice.reset();
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
    if (context_.database_choice && context_.database_choice->kind == pass.name()) {
      instruction = std::move(*context_.database_choice);  // what it took from the database
    } else {
      instruction.kind = pass.name();
      instruction.decision = ir::AttrValue(std::string("apply"));
    }
    context_.database_choice.reset();
    instruction.attrs.Set("pass", PrintPipeline(pass));
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

void WriteTraceFile(const TraceFile& file, const std::string& path) {
  nlohmann::json json = {{"format", "tandem-trace"},
                         {"version", 1},
                         {"model", file.model},
                         {"model_hash", file.model_hash},
                         {"pipeline", file.pipeline},
                         {"target", file.target},
                         {"trace", nlohmann::json::parse(file.trace.ToJson())}};
  std::ofstream out(path);
  out << json.dump(1) << "\n";
  if (!out) throw ir::Error("cannot write the trace file", {.file = path});
}

TraceFile ReadTraceFile(const std::string& path) {
  std::string text = ir::ReadRegularFile(path, "trace file");
  ir::CheckJsonDepth(text, path);
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw ir::Error("not a trace file: the file is not a JSON object", {.file = path});
  }
  if (json.value("format", "") != "tandem-trace") {
    throw ir::Error("not a trace file: \"format\" is not \"tandem-trace\"", {.file = path});
  }
  if (json.value("version", 0) != 1) {
    throw ir::Error(fmt::format("trace file version {} is not supported (expected 1)",
                                json.value("version", 0)),
                    {.file = path});
  }
  TraceFile file;
  try {
    for (const char* field : {"model", "model_hash", "pipeline", "target"}) {
      if (!json.contains(field) || !json.at(field).is_string()) {
        throw ir::Error(fmt::format("missing string field \"{}\"", field));
      }
    }
    file.model = json.at("model").get<std::string>();
    file.model_hash = json.at("model_hash").get<std::string>();
    file.pipeline = json.at("pipeline").get<std::string>();
    file.target = json.at("target").get<std::string>();
    if (!json.contains("trace")) throw ir::Error("missing field \"trace\"");
    file.trace = ir::Trace::FromJson(json.at("trace").dump());
  } catch (const ir::Error& e) {
    throw ir::Error(e.message(), {.file = path});
  }
  return file;
}

ir::IRModule ReplayTraceFile(const ir::IRModule& model, const TraceFile& file) {
  std::string hash = ir::HashToHex(ir::StructuralHash(model));
  if (hash != file.model_hash) {
    throw ir::Error(
        fmt::format("the trace was recorded on another model ({}, hash {}); this one has hash {}",
                    file.model, file.model_hash, hash));
  }
  PassContext context;
  context.target = tuning::TargetOfDescriptor(file.target);
  return ReplayTrace(model, file.trace, context);
}

}  // namespace tandem::passes
