// Helpers the tests of the token-input examples (examples/models/bert_tokens/, gpt_tokens/)
// share: the committed model's bytes, its import at one sequence length, its stored
// test_data_seq<length>/ tensors, default_heuristic builds of it (static and dynamic) and op
// counts of an imported module.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/runtime/dynamic_executable.h"
#include "backends/runtime/executable.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::testing {

// How an import binds the model's symbolic axes to a sequence length.
enum class TokenBinding {
  kInputShapes,  // input_shapes: input_ids and attention_mask are [1, length]
  kSymbols,      // symbols: batch = 1, sequence = length
};

// One token example: examples/models/<name>/, whose model is named `name` at import.
struct TokenExample {
  std::string name;  // "bert_tokens" or "gpt_tokens"

  std::string Directory() const {
    return std::string(TANDEM_SOURCE_DIR) + "/examples/models/" + name;
  }
  // The committed model.onnx.
  std::string ModelBytes() const {
    std::ifstream in(Directory() + "/model.onnx", std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }
  // The model `bytes` imported with its sequence axis bound to `length`.
  ir::IRModule ImportAt(const std::string& bytes, int64_t length,
                        TokenBinding binding = TokenBinding::kInputShapes) const {
    frontend::OnnxImportOptions options;
    if (binding == TokenBinding::kInputShapes) {
      options.input_shapes = {{"input_ids", {1, length}}, {"attention_mask", {1, length}}};
    } else {
      options.symbols = {{"batch", 1}, {"sequence", length}};
    }
    return frontend::ImportOnnxModel(bytes, name, options);
  }
  // The committed model imported at `length` (input_shapes).
  ir::IRModule ImportAt(int64_t length) const { return ImportAt(ModelBytes(), length); }
  // The stored tensors of test_data_seq<length>/ whose file names start with `prefix`
  // ("input" or "output").
  std::vector<ir::Tensor> Stored(int64_t length, const std::string& prefix) const {
    return frontend::ReadTensorProtoDirectory(
        Directory() + "/test_data_seq" + std::to_string(length), prefix);
  }
  // A source for one dynamic build over `range` of the model `bytes`: the module at each length
  // is the import bound to it with default_heuristic's graph passes (its pipeline without the
  // final Legalize) applied.
  backends::DynamicModuleSource DynamicSource(
      const std::string& bytes, const kernels::DynamicRange& range,
      TokenBinding binding = TokenBinding::kInputShapes) const {
    std::string graph_part = pipelines::WithoutFinalLegalize(
        pipelines::PipelineRegistry::Global().Get("default_heuristic").text);
    backends::DynamicModuleSource source;
    source.ranges = {range};
    source.make = [example = *this, bytes, graph_part, binding](const std::vector<int64_t>& n) {
      passes::PassContext context;
      return context.RunPipeline(*passes::ParsePipeline(graph_part),
                                 example.ImportAt(bytes, n.front(), binding));
    };
    return source;
  }

  // Expects the committed model.onnx to be `generated`, the bytes `builder` (the example's
  // Build...Model, named in the message) writes now, and under 1 MiB.
  void ExpectCommittedModelIs(const std::string& generated, const std::string& builder) const {
    std::string committed = ModelBytes();
    EXPECT_TRUE(generated == committed)
        << "examples/models/" << name << "/model.onnx differs from what " << builder
        << " builds; regenerate it with build/tests/tandem_make_" << name << " examples/models/"
        << name;
    EXPECT_LT(committed.size(), 1u << 20);
  }

  // Expects `run` on the stored inputs at lengths 16, 77 and 128 to give outputs of shape
  // [1, length, width] within relative error `tolerance` of the stored ones (a fatal failure
  // on a wrong shape: callers wrap it in ASSERT_NO_FATAL_FAILURE).
  void ExpectStoredOutputs(const std::function<ir::Tensor(const std::vector<ir::Tensor>&)>& run,
                           int64_t width, double tolerance) const {
    for (int64_t length : {16, 77, 128}) {
      SCOPED_TRACE("sequence length " + std::to_string(length));
      ir::Tensor output = run(Stored(length, "input"));
      ASSERT_EQ(output.shape(), (ir::Shape{1, length, width}));
      EXPECT_LT(ir::RelativeError(output, Stored(length, "output").at(0)), tolerance);
    }
  }
};

// Inputs [batch, length] for a run at a size with no stored data: ids drawn from
// [0, vocabulary) with seed `ids_seed` and a random 0/1 attention mask (seed `mask_seed`) whose
// first token in each row is valid.
inline std::vector<ir::Tensor> RandomTokenInputs(int64_t length, uint64_t ids_seed,
                                                 uint64_t mask_seed, int64_t vocabulary,
                                                 int64_t batch = 1) {
  ir::TensorType type{{batch, length}, ir::DataType::kInt64, ""};
  ir::Tensor ids = ir::Tensor::Random(type, ids_seed, 0, static_cast<double>(vocabulary));
  ir::Tensor mask = ir::Tensor::Random(type, mask_seed, 0, 2);
  for (int64_t row = 0; row < batch; ++row) mask.data<int64_t>()[row * length] = 1;
  return {ids, mask};
}

// `module` compiled with default_heuristic.
inline std::unique_ptr<backends::Executable> CompileDefaultHeuristic(const ir::IRModule& module) {
  passes::PassContext context;
  return backends::Build(context.RunPipeline(
      *pipelines::PipelineRegistry::Global().Create("default_heuristic"), module));
}

// How many calls of `op` the main function of `module` has.
inline int CountCalls(const ir::IRModule& module, const std::string& op) {
  int count = 0;
  for (const ir::Node& node : module.Get("main").nodes) {
    count += node.kind == ir::NodeKind::kCall && node.op == op ? 1 : 0;
  }
  return count;
}

}  // namespace tandem::testing
