#include "fuzz/fuzz_targets.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pipeline_text.h"
#include "tuning/database/database.h"
#include "tuning/database/record_trace.h"
#include "tuning/session/record_reuse.h"

namespace tandem::fuzz {

namespace {

std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Parses `text`; when that succeeds, the printed result must parse again (a finding otherwise:
// the process aborts after printing the error and the printed text). `what` names the kind of
// text in that report.
template <typename Parse, typename Print>
int ParsePrintParse(const std::string& text, const char* what, Parse parse, Print print) {
  std::string printed;
  try {
    printed = print(parse(text));
  } catch (const ir::Error&) {
    return 0;
  }
  try {
    parse(printed);
  } catch (const ir::Error& e) {
    std::cerr << what << " printed text that does not parse again: " << e.what() << "\n"
              << printed << "\n";
    std::abort();
  }
  return 0;
}

}  // namespace

int OnnxImporter(const uint8_t* data, size_t size) {
  try {
    frontend::ImportOnnxModel(Text(data, size), "fuzz.onnx");
  } catch (const ir::Error&) {
  }
  return 0;
}

int PipelineText(const uint8_t* data, size_t size) {
  return ParsePrintParse(
      Text(data, size), "a pipeline", [](const std::string& t) { return passes::ParsePipeline(t); },
      [](const passes::PassPtr& pipeline) { return passes::PrintPipeline(*pipeline); });
}

int GraphText(const uint8_t* data, size_t size) {
  return ParsePrintParse(
      Text(data, size), "a module", [](const std::string& t) { return ir::ParseModule(t, "fuzz"); },
      [](const ir::IRModule& module) { return ir::PrintModule(module); });
}

int KernelText(const uint8_t* data, size_t size) {
  return ParsePrintParse(
      Text(data, size), "a kernel", [](const std::string& t) { return ir::ParseKernel(t, "fuzz"); },
      [](const ir::KernelFunction& kernel) { return ir::PrintKernel(kernel); });
}

int Records(const uint8_t* data, size_t size) {
  std::unique_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  std::istringstream lines(Text(data, size));
  try {
    database->ImportJsonLines(lines);
  } catch (const ir::Error&) {
    // The lines before the malformed one were imported: decode those.
  }
  for (const tuning::Workload& workload : database->Workloads()) {
    for (const std::string& target : database->Targets(workload.hash)) {
      for (const tuning::TuningRecord& record : database->Records(workload.hash, target)) {
        try {
          tuning::DecodeRecordTrace(record);
        } catch (const ir::Error&) {
        }
        // Reads the record's measured_by, never throws.
        tuning::RecordAnswersUnder(record, tuning::MeasureOptions{});
      }
    }
  }
  return 0;
}

const std::vector<Target>& Targets() {
  static const std::vector<Target> kTargets = {{"onnx_importer", OnnxImporter},
                                               {"pipeline_text", PipelineText},
                                               {"graph_text", GraphText},
                                               {"kernel_text", KernelText},
                                               {"records", Records}};
  return kTargets;
}

}  // namespace tandem::fuzz
