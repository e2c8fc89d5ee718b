// Helpers the example models (examples/models/*/) share to write an ONNX graph through the
// protobuf API deterministically: a portable random generator for their weights, a writer that
// adds nodes and initializers under exporter-style names, attribute builders and graph inputs
// with symbolic dimensions.
#pragma once

#include <onnx/onnx_pb.h>

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

}  // namespace tandem::examples
