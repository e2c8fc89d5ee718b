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

namespace tandem::fuzz {

namespace {

std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A parse that succeeded must print to text that parses again: a finding otherwise.
[[noreturn]] void RoundTripFailed(const std::string& what, const ir::Error& error,
                                  const std::string& printed) {
  std::cerr << what << " printed text that does not parse again: " << error.what() << "\n"
            << printed << "\n";
  std::abort();
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
  passes::PassPtr pipeline;
  try {
    pipeline = passes::ParsePipeline(Text(data, size));
  } catch (const ir::Error&) {
    return 0;
  }
  std::string printed = passes::PrintPipeline(*pipeline);
  try {
    passes::ParsePipeline(printed);
  } catch (const ir::Error& e) {
    RoundTripFailed("a pipeline", e, printed);
  }
  return 0;
}

int GraphText(const uint8_t* data, size_t size) {
  ir::IRModule module;
  try {
    module = ir::ParseModule(Text(data, size), "fuzz");
  } catch (const ir::Error&) {
    return 0;
  }
  std::string printed = ir::PrintModule(module);
  try {
    ir::ParseModule(printed, "printed");
  } catch (const ir::Error& e) {
    RoundTripFailed("a module", e, printed);
  }
  return 0;
}

int KernelText(const uint8_t* data, size_t size) {
  ir::KernelFunction kernel;
  try {
    kernel = ir::ParseKernel(Text(data, size), "fuzz");
  } catch (const ir::Error&) {
    return 0;
  }
  std::string printed = ir::PrintKernel(kernel);
  try {
    ir::ParseKernel(printed, "printed");
  } catch (const ir::Error& e) {
    RoundTripFailed("a kernel", e, printed);
  }
  return 0;
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
