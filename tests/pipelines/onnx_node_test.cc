// ONNX's own backend node tests (Debian's libonnx-testdata: one directory per case holding
// model.onnx and test_data_set_*/input_*.pb, output_*.pb): every case whose op types the importer
// converts is imported, checked on the reference interpreter against the stored outputs, then
// optimized with default_heuristic, compiled with LLVM, run and checked again.
//
// A case is skipped, with its reason counted, when it uses something Tandem does not support: an
// op type without a converter, a data type Tandem lacks, an input that must be known at import
// (a runtime shape or index), or another attribute or feature the importer rejects. A case whose
// import needs an input's value (a Resize's scales, a Tile's repeats, a CumSum's axis) is retried
// with that input bound to its value in the test data as an initializer, when every data set
// holds the same value; it then counts as passed with inputs bound, or as failed. Once a case
// imports, any difference from the stored outputs, a reference error or a build error is a
// failure. The counts are printed and recorded as test properties; the README's table comes from
// them. Without the test data (TANDEM_ONNX_NODE_TESTS, else the Debian package's directory) the
// test skips.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "passes/pass.h"
#include "pipelines/pipeline_registry.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// ONNX's backend test tolerances (numpy.testing.assert_allclose) with a wider absolute one for
// f32 results near zero.
constexpr double kRelativeTolerance = 1e-3;
constexpr double kAbsoluteTolerance = 1e-5;

fs::path NodeTestDirectory() {
  if (const char* dir = std::getenv("TANDEM_ONNX_NODE_TESTS")) return dir;
  return "/usr/share/libonnx-testdata/data/node";
}

// The op types (ConverterKey form) of a model's graph; empty when the file does not parse.
std::set<std::string> OpTypes(const fs::path& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  std::set<std::string> ops;
  if (!model.ParseFromString(bytes.str())) return ops;
  for (const onnx::NodeProto& node : model.graph().node()) {
    bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    ops.insert(default_domain ? node.op_type() : node.domain() + "." + node.op_type());
  }
  return ops;
}

// Why an import failed, as one of a few reasons.
std::string ImportSkipReason(const std::string& message) {
  auto has = [&](const char* part) { return message.find(part) != std::string::npos; };
  if (has("ONNX data type")) return "data type not supported (bfloat16, string, uint16/32/64)";
  if (has("known at import") || has("computed by the graph")) {
    return "runtime value needed at import (shape, axes, pads, bounds, indices, condition)";
  }
  if (has("opset")) return "opset before 11 with an op changed since";
  if (has("not a tensor")) return "sequence or optional values";
  if (has("training mode")) return "training mode";
  if (has("supports 1-D and 2-D")) return "3-D pooling or transposed convolution";
  if (has("output") && has("not supported")) return "extra output (Mean/InvStdDev, Indices)";
  return "other attribute or feature";
}

// Empty when `actual` matches `expected` (dtype, shape, every element within the tolerances,
// NaN where NaN, infinities equal), else what differs.
std::string Compare(const ir::Tensor& actual, const ir::Tensor& expected) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return "result " + ir::ToString(actual.type()) + " but expected " +
           ir::ToString(expected.type());
  }
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    double a = actual.GetDouble(i), e = expected.GetDouble(i);
    bool ok = std::isnan(e) ? std::isnan(a)
              : std::isinf(e)
                  ? a == e
                  : std::abs(a - e) <= kAbsoluteTolerance + kRelativeTolerance * std::abs(e);
    if (!ok) {
      return "element " + std::to_string(i) + " is " + std::to_string(a) + " but expected " +
             std::to_string(e);
    }
  }
  return "";
}

// Empty when every output matches, else the first difference.
std::string CompareAll(const std::vector<ir::Tensor>& outputs,
                       const std::vector<ir::Tensor>& expected) {
  if (outputs.size() != expected.size()) {
    return std::to_string(outputs.size()) + " outputs but " + std::to_string(expected.size()) +
           " expected";
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string difference = Compare(outputs[i], expected[i]);
    if (!difference.empty()) return "output " + std::to_string(i) + ": " + difference;
  }
  return "";
}

struct Tally {
  std::vector<std::string> passed;
  std::map<std::string, int> skipped;      // by reason
  std::map<std::string, int> unsupported;  // op types without a converter, by case count
  std::vector<std::string> skip_details;   // case: message
  std::vector<std::string> failures;       // case: what went wrong
  std::vector<std::string> bound;          // passed cases imported with inputs bound
};

// The ONNX name of the input an import error says must be known at import ("input 2 ('scales',
// the scales) of Resize must be known at import time"), or "" when it names none.
std::string InputNeededAtImport(const std::string& message) {
  size_t known = message.find("must be known at import");
  size_t open = message.rfind("('", known);
  if (known == std::string::npos || open == std::string::npos) return "";
  size_t close = message.find("', ", open);
  return close == std::string::npos ? "" : message.substr(open + 2, close - open - 2);
}

// Imports the case's model; an input whose value the import needs (InputNeededAtImport) and
// every data set holds alike is bound to that value as an initializer and the import retried.
// The bound inputs are removed from `data_sets`, their positions added to `bound`.
ir::IRModule ImportBindingInputs(
    const fs::path& model_path,
    std::vector<std::pair<std::vector<ir::Tensor>, std::vector<ir::Tensor>>>& data_sets,
    std::vector<std::string>& bound) {
  std::ifstream in(model_path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str())) return frontend::ImportOnnxFile(model_path.string());
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> inputs;  // the graph inputs the data sets give, in order
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    if (!initializers.count(v.name())) inputs.push_back(v.name());
  }
  std::vector<size_t> removed;
  for (int attempt = 0;; ++attempt) {
    try {
      ir::IRModule module =
          frontend::ImportOnnxModel(model.SerializeAsString(), model_path.string());
      std::sort(removed.rbegin(), removed.rend());
      for (auto& [set_inputs, outputs] : data_sets) {
        for (size_t k : removed) set_inputs.erase(set_inputs.begin() + static_cast<int64_t>(k));
      }
      return module;
    } catch (const ir::Error& e) {
      std::string name = InputNeededAtImport(e.what());
      auto it = std::find(inputs.begin(), inputs.end(), name);
      if (attempt == 4 || name.empty() || it == inputs.end() || data_sets.empty()) throw;
      auto k = static_cast<size_t>(it - inputs.begin());
      for (const auto& [set_inputs, outputs] : data_sets) {
        if (k >= set_inputs.size() ||
            set_inputs[k].ToDoubles() != data_sets[0].first[k].ToDoubles()) {
          throw;
        }
      }
      const ir::Tensor& value = data_sets[0].first[k];
      frontend::TensorToProto(value, model.mutable_graph()->add_initializer(), name);
      bound.push_back(name);
      removed.push_back(k);
    }
  }
}

// Runs one case directory; adds its outcome to `tally`.
void RunCase(const fs::path& dir, const std::set<std::string>& supported, Tally& tally) {
  std::string name = dir.filename().string();
  std::set<std::string> ops = OpTypes(dir / "model.onnx");
  std::vector<std::string> missing;
  for (const std::string& op : ops) {
    if (!supported.count(op)) missing.push_back(op);
  }
  if (ops.empty() || !missing.empty()) {
    ++tally.skipped["op type not supported"];
    for (const std::string& op : missing) ++tally.unsupported[op];
    return;
  }
  std::vector<std::pair<std::vector<ir::Tensor>, std::vector<ir::Tensor>>> data_sets;
  for (int set = 0; fs::exists(dir / ("test_data_set_" + std::to_string(set))); ++set) {
    std::string data = (dir / ("test_data_set_" + std::to_string(set))).string();
    try {
      bool has_inputs = fs::exists(fs::path(data) / "input_0.pb");  // test_constant has none
      data_sets.emplace_back(has_inputs ? frontend::ReadTensorProtoDirectory(data, "input")
                                        : std::vector<ir::Tensor>{},
                             frontend::ReadTensorProtoDirectory(data, "output"));
    } catch (const ir::Error& e) {
      std::string why = e.what();
      try {  // a model that does not import either is skipped for that reason
        frontend::ImportOnnxFile((dir / "model.onnx").string());
        ++tally.skipped["test data not readable"];
      } catch (const ir::Error& import_error) {
        why = import_error.what();
        ++tally.skipped[ImportSkipReason(why)];
      }
      tally.skip_details.push_back(name + ": " + why);
      return;
    }
  }
  ir::IRModule module;
  std::vector<std::string> bound;
  try {
    module = ImportBindingInputs(dir / "model.onnx", data_sets, bound);
  } catch (const ir::Error& e) {
    ++tally.skipped[ImportSkipReason(e.what())];
    tally.skip_details.push_back(name + ": " + e.what());
    return;
  }
  std::unique_ptr<backends::Executable> executable;
  try {
    passes::PassContext context;
    ir::IRModule optimized = context.RunPipeline(
        *pipelines::PipelineRegistry::Global().Create("default_heuristic"), module);
    executable = backends::Build(optimized);
  } catch (const ir::Error& e) {
    tally.failures.push_back(name + ": default_heuristic + Build: " + e.what());
    return;
  }
  for (size_t set = 0; set < data_sets.size(); ++set) {
    const auto& [inputs, expected] = data_sets[set];
    std::string where = name + " data set " + std::to_string(set);
    try {
      std::string difference = CompareAll(backends::RunReference(module, inputs), expected);
      if (!difference.empty()) {
        tally.failures.push_back(where + ": reference interpreter: " + difference);
        return;
      }
      difference = CompareAll(executable->Run(inputs), expected);
      if (!difference.empty()) {
        tally.failures.push_back(where + ": compiled: " + difference);
        return;
      }
    } catch (const ir::Error& e) {
      tally.failures.push_back(where + ": " + e.what());
      return;
    }
  }
  tally.passed.push_back(name);
  if (!bound.empty()) tally.bound.push_back(name + " (" + bound.front() + ")");
}

TEST(OnnxNodeTests, SupportedOpsMatchTheStoredOutputs) {
  fs::path root = NodeTestDirectory();
  if (!fs::is_directory(root)) {
    GTEST_SKIP() << "no ONNX node test data at " << root
                 << " (install Debian's libonnx-testdata or set TANDEM_ONNX_NODE_TESTS)";
  }
  std::vector<fs::path> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) {
      cases.push_back(entry.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  std::vector<std::string> supported_list = frontend::SupportedOnnxOps();
  std::set<std::string> supported(supported_list.begin(), supported_list.end());

  auto start = std::chrono::steady_clock::now();
  Tally tally;
  for (const fs::path& dir : cases) RunCase(dir, supported, tally);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int skipped = 0;
  for (const auto& [reason, count] : tally.skipped) skipped += count;
  std::cout << "[ onnx     ] " << cases.size() << " node tests in " << seconds
            << " s: " << tally.passed.size() << " passed, " << tally.failures.size() << " failed, "
            << skipped << " skipped\n";
  for (const auto& [reason, count] : tally.skipped) {
    std::cout << "[ onnx     ]   skipped, " << reason << ": " << count << "\n";
  }
  for (const std::string& detail : tally.skip_details) {
    std::cout << "[ skipped  ] " << detail << "\n";
  }
  std::vector<std::pair<int, std::string>> unsupported;
  for (const auto& [op, count] : tally.unsupported) unsupported.push_back({-count, op});
  std::sort(unsupported.begin(), unsupported.end());
  std::cout << "[ onnx     ] op types without a converter (cases):";
  for (const auto& [count, op] : unsupported) std::cout << " " << op << " (" << -count << ")";
  std::cout << "\n";
  std::cout << "[ onnx     ] " << tally.bound.size() << " of them with inputs bound at import:";
  for (const std::string& name : tally.bound) std::cout << " " << name;
  std::cout << "\n";
  std::cout << "[ onnx     ] passed:";
  for (const std::string& name : tally.passed) std::cout << " " << name;
  std::cout << "\n";
  ::testing::Test::RecordProperty("passed", static_cast<int>(tally.passed.size()));
  ::testing::Test::RecordProperty("passed_with_inputs_bound", static_cast<int>(tally.bound.size()));
  ::testing::Test::RecordProperty("failed", static_cast<int>(tally.failures.size()));
  ::testing::Test::RecordProperty("skipped", skipped);
  for (const std::string& failure : tally.failures) ADD_FAILURE() << failure;
  EXPECT_FALSE(tally.passed.empty());
}

// The ops the importer writes as chains of graph ops (HardSwish, Selu, Softplus, Mean, BiasGelu)
// fuse into one kernel under default_heuristic, like a single op would.
TEST(OnnxNodeTests, CompositionsFuseIntoOneKernel) {
  fs::path root = NodeTestDirectory();
  for (const char* name : {"test_hardswish", "test_selu_example", "test_softplus_example",
                           "test_mean_two_inputs", "test_hardsigmoid_default"}) {
    SCOPED_TRACE(name);
    if (!fs::exists(root / name / "model.onnx")) GTEST_SKIP() << "no " << root / name;
    ir::IRModule module = frontend::ImportOnnxFile((root / name / "model.onnx").string());
    passes::PassContext context;
    ir::IRModule optimized = context.RunPipeline(
        *pipelines::PipelineRegistry::Global().Create("default_heuristic"), module);
    int kernel_calls = 0;
    for (const ir::Node& node : optimized.Get("main").nodes) {
      kernel_calls += node.kind == ir::NodeKind::kCallKernel ? 1 : 0;
    }
    EXPECT_EQ(kernel_calls, 1) << ir::PrintFunction(optimized.Get("main"));
  }
}

}  // namespace
}  // namespace tandem
