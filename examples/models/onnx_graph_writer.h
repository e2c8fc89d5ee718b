// Helpers the example models (examples/models/*/) share to write an ONNX graph through the
// protobuf API deterministically: a portable random generator for their weights, a writer that
// adds nodes and initializers under exporter-style names, attribute builders and graph inputs
// with symbolic dimensions.
#pragma once

#include <onnx/onnx_pb.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tandem::examples {

// Uniform values in [low, high) from the raw output of a 64-bit Mersenne Twister (the same
// sequence with every standard library, unlike std::uniform_real_distribution).
class Generator {
 public:
  explicit Generator(uint64_t seed) : engine_(seed) {}
  double Uniform(double low, double high);

 private:
  std::mt19937_64 engine_;
};

// A float32 tensor of `shape` with values offset + Uniform(-scale, scale), in row-major order.
ir::Tensor RandomFloats(const ir::Shape& shape, Generator& generator, double scale,
                        double offset = 0);

// Adds nodes and initializers to a graph; a node's single output is named after the node,
// "<name>_output_0", as exporters name them ("/layer/Op_output_0").
class GraphWriter {
 public:
  explicit GraphWriter(onnx::GraphProto* graph) : graph_(graph) {}

  // Adds the node and returns the name of its output.
  std::string Node(const std::string& op, const std::string& name,
                   const std::vector<std::string>& inputs,
                   const std::vector<onnx::AttributeProto>& attrs = {});
  // Adds a node with several outputs, "<name>_output_<i>" for i < outputs; returns their names.
  std::vector<std::string> MultiNode(const std::string& op, const std::string& name,
                                     const std::vector<std::string>& inputs, int outputs,
                                     const std::vector<onnx::AttributeProto>& attrs = {});
  // Adds an initializer and returns its name.
  std::string Initializer(const std::string& name, const ir::Tensor& value);
  // A scalar (rank-0) initializer.
  std::string Scalar(const std::string& name, double value,
                     ir::DataType dtype = ir::DataType::kFloat32);
  // A one-dimensional int64 initializer.
  std::string Ints(const std::string& name, const std::vector<int64_t>& values);

 private:
  onnx::GraphProto* graph_;
};

onnx::AttributeProto IntAttr(const std::string& name, int64_t value);
onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto FloatAttr(const std::string& name, float value);

// Adds a graph input of ONNX element type `elem_type` whose dimensions are all symbolic (dims are
// their dim_param names).
void AddInput(onnx::GraphProto* graph, const std::string& name, int elem_type,
              const std::vector<std::string>& dims);

// Starts a token-input example model (opset 17, ir_version 8, producer
// "tandem examples/models/<name>", graph `name`) with the int64 inputs input_ids and
// attention_mask [batch, sequence]; returns its graph, for the caller to fill.
onnx::GraphProto* StartTokenModel(onnx::ModelProto& model, const std::string& name);

// x @ weight + bias as exporters write a linear layer: MatMul then Add, under `prefix`.
std::string LinearNode(GraphWriter& g, const std::string& prefix, const std::string& x,
                       const std::string& weight, const std::string& bias);
// LayerNormalization over the last axis with `epsilon`, under `prefix`.
std::string LayerNormNode(GraphWriter& g, const std::string& prefix, const std::string& x,
                          const std::string& gamma, const std::string& beta, double epsilon);

// Draws a token model's embedding parameters in this order and returns their names: names[0] the
// token embedding [vocabulary, hidden] (values within 1 of 0), names[1] the position embedding
// [max_positions, hidden] (within 0.5), names[2] and names[3] a LayerNorm's gamma (within 0.1 of
// 1) and beta (within 0.1 of 0) [hidden].
std::array<std::string, 4> DrawTokenEmbeddings(GraphWriter& g, Generator& generator,
                                               const std::array<std::string, 4>& names,
                                               int64_t vocabulary, int64_t max_positions,
                                               int64_t hidden);

// The embedding sum exporters write for token input: Gather(tokens, input_ids) +
// Gather(positions, Range(0, Shape(input_ids)[1], 1)). Nodes are "/<module>/Shape",
// "/<module>/<length_gather>", "/<module>/Range", "/<module>/Add" and the gathers
// "/<module>/<token_module>/Gather" and "/<module>/<position_module>/Gather"; the constants
// "<module>.axis1", "<module>.zero" and "<module>.step".
struct TokenEmbeddingNodes {
  std::string sum;     // [B, S, hidden]
  std::string length;  // the sequence length, an int64 scalar
};
TokenEmbeddingNodes EmbedTokenNodes(GraphWriter& g, const std::string& module,
                                    const std::string& tokens, const std::string& token_module,
                                    const std::string& positions,
                                    const std::string& position_module,
                                    const std::string& length_gather);

// Inputs for one batch of `sequence` tokens of a token example: input_ids drawn from
// [0, vocabulary) and an attention mask with the last quarter of the positions padding (0).
// Deterministic in `seed`.
std::vector<ir::Tensor> TokenInputs(int64_t sequence, uint64_t seed, int64_t vocabulary);

}  // namespace tandem::examples
