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

onnx::GraphProto* StartTokenModel(onnx::ModelProto& model, const std::string& name) {
  model.set_ir_version(8);
  model.set_producer_name("tandem examples/models/" + name);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(name);
  AddInput(graph, "input_ids", onnx::TensorProto::INT64, {"batch", "sequence"});
  AddInput(graph, "attention_mask", onnx::TensorProto::INT64, {"batch", "sequence"});
  return graph;
}

std::string LinearNode(GraphWriter& g, const std::string& prefix, const std::string& x,
                       const std::string& weight, const std::string& bias) {
  std::string product = g.Node("MatMul", prefix + "/MatMul", {x, weight});
  return g.Node("Add", prefix + "/Add", {product, bias});
}

std::string LayerNormNode(GraphWriter& g, const std::string& prefix, const std::string& x,
                          const std::string& gamma, const std::string& beta, double epsilon) {
  return g.Node("LayerNormalization", prefix + "/LayerNormalization", {x, gamma, beta},
                {IntAttr("axis", -1), FloatAttr("epsilon", static_cast<float>(epsilon))});
}

std::array<std::string, 4> DrawTokenEmbeddings(GraphWriter& g, Generator& generator,
                                               const std::array<std::string, 4>& names,
                                               int64_t vocabulary, int64_t max_positions,
                                               int64_t hidden) {
  return {g.Initializer(names[0], RandomFloats({vocabulary, hidden}, generator, 1.0)),
          g.Initializer(names[1], RandomFloats({max_positions, hidden}, generator, 0.5)),
          g.Initializer(names[2], RandomFloats({hidden}, generator, 0.1, 1.0)),
          g.Initializer(names[3], RandomFloats({hidden}, generator, 0.1))};
}

TokenEmbeddingNodes EmbedTokenNodes(GraphWriter& g, const std::string& module,
                                    const std::string& tokens, const std::string& token_module,
                                    const std::string& positions,
                                    const std::string& position_module,
                                    const std::string& length_gather) {
  std::string p = "/" + module;
  std::string token = g.Node("Gather", p + "/" + token_module + "/Gather", {tokens, "input_ids"});
  std::string shape = g.Node("Shape", p + "/Shape", {"input_ids"});
  std::string length = g.Node("Gather", p + "/" + length_gather,
                              {shape, g.Scalar(module + ".axis1", 1, ir::DataType::kInt64)});
  std::string range = g.Node("Range", p + "/Range",
                             {g.Scalar(module + ".zero", 0, ir::DataType::kInt64), length,
                              g.Scalar(module + ".step", 1, ir::DataType::kInt64)});
  std::string position =
      g.Node("Gather", p + "/" + position_module + "/Gather", {positions, range});
  return {g.Node("Add", p + "/Add", {token, position}), length};
}

std::vector<ir::Tensor> TokenInputs(int64_t sequence, uint64_t seed, int64_t vocabulary) {
  Generator generator(seed);
  ir::Tensor ids({1, sequence}, ir::DataType::kInt64);
  ir::Tensor mask({1, sequence}, ir::DataType::kInt64);
  int64_t valid = sequence - sequence / 4;
  for (int64_t i = 0; i < sequence; ++i) {
    ids.data<int64_t>()[i] = static_cast<int64_t>(generator.Uniform(0, 1) * vocabulary);
    mask.data<int64_t>()[i] = i < valid ? 1 : 0;
  }
  return {ids, mask};
}

}  // namespace tandem::examples
