#include "examples/models/onnx_graph_writer.h"

#include "frontend/onnx_tensor.h"

namespace tandem::examples {

double Generator::Uniform(double low, double high) {
  double unit = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  return low + (high - low) * unit;
}

ir::Tensor RandomFloats(const ir::Shape& shape, Generator& generator, double scale, double offset) {
  ir::Tensor t(shape, ir::DataType::kFloat32);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data<float>()[i] = static_cast<float>(offset + generator.Uniform(-scale, scale));
  }
  return t;
}

std::string GraphWriter::Node(const std::string& op, const std::string& name,
                              const std::vector<std::string>& inputs,
                              const std::vector<onnx::AttributeProto>& attrs) {
  return MultiNode(op, name, inputs, 1, attrs).at(0);
}

std::vector<std::string> GraphWriter::MultiNode(const std::string& op, const std::string& name,
                                                const std::vector<std::string>& inputs, int outputs,
                                                const std::vector<onnx::AttributeProto>& attrs) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) {
    names.push_back(name + "_output_" + std::to_string(i));
    node->add_output(names.back());
  }
  for (const onnx::AttributeProto& a : attrs) *node->add_attribute() = a;
  return names;
}

std::string GraphWriter::Initializer(const std::string& name, const ir::Tensor& value) {
  frontend::TensorToProto(value, graph_->add_initializer(), name);
  return name;
}

std::string GraphWriter::Scalar(const std::string& name, double value, ir::DataType dtype) {
  ir::Tensor t({}, dtype);
  t.SetDouble(0, value);
  return Initializer(name, t);
}

std::string GraphWriter::Ints(const std::string& name, const std::vector<int64_t>& values) {
  return Initializer(name, ir::Tensor::FromInt64s({static_cast<int64_t>(values.size())}, values));
}

onnx::AttributeProto IntAttr(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto FloatAttr(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

void AddInput(onnx::GraphProto* graph, const std::string& name, int elem_type,
              const std::vector<std::string>& dims) {
  auto* input = graph->add_input();
  input->set_name(name);
  auto* tensor = input->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  for (const std::string& dim : dims) tensor->mutable_shape()->add_dim()->set_dim_param(dim);
}

}  // namespace tandem::examples
