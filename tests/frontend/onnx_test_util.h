// Helpers for the ONNX importer tests: a small builder of ONNX models through the protobuf API,
// and shortcuts to import and run them on the reference interpreter.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::frontend::testing {

inline onnx::AttributeProto IntAttr(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

inline onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

inline onnx::AttributeProto FloatAttr(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

inline onnx::AttributeProto FloatsAttr(const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a.add_floats(v);
  return a;
}

inline onnx::AttributeProto StringAttr(const std::string& name, const std::string& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
  return a;
}

inline onnx::AttributeProto TensorAttr(const std::string& name, const ir::Tensor& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  TensorToProto(value, a.mutable_t());
  return a;
}

// Builds an ONNX ModelProto node by node.
class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("tandem-test");
    auto* entry = model_.add_opset_import();
    entry->set_domain("");
    entry->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // A graph input; a negative extent becomes the symbolic dimension "dim<axis>".
  OnnxModel& Input(const std::string& name, const ir::Shape& shape,
                   ir::DataType dtype = ir::DataType::kFloat32) {
    auto* input = graph()->add_input();
    input->set_name(name);
    auto* tensor = input->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(DataTypeToOnnx(dtype));
    auto* dims = tensor->mutable_shape();
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] >= 0) {
        dims->add_dim()->set_dim_value(shape[i]);
      } else {
        dims->add_dim()->set_dim_param("dim" + std::to_string(i));
      }
    }
    return *this;
  }

  OnnxModel& Initializer(const std::string& name, const ir::Tensor& value) {
    TensorToProto(value, graph()->add_initializer(), name);
    return *this;
  }

  OnnxModel& Node(const std::string& op, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs,
                  const std::vector<onnx::AttributeProto>& attrs = {},
                  const std::string& name = "") {
    auto* node = graph()->add_node();
    node->set_op_type(op);
    if (!name.empty()) node->set_name(name);
    for (const std::string& i : inputs) node->add_input(i);
    for (const std::string& o : outputs) node->add_output(o);
    for (const onnx::AttributeProto& a : attrs) *node->add_attribute() = a;
    return *this;
  }

  // A graph output without a declared type.
  OnnxModel& Output(const std::string& name) {
    graph()->add_output()->set_name(name);
    return *this;
  }

  onnx::ModelProto& proto() { return model_; }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  std::string Serialize() const { return model_.SerializeAsString(); }

  ir::IRModule Import(const OnnxImportOptions& options = {}) const {
    return ImportOnnxModel(Serialize(), "test-model", options);
  }

 private:
  onnx::ModelProto model_;
};

// Imports `model` and runs it on the reference interpreter.
inline std::vector<ir::Tensor> ImportAndRun(const OnnxModel& model,
                                            const std::vector<ir::Tensor>& inputs,
                                            const OnnxImportOptions& options = {}) {
  return backends::RunReference(model.Import(options), inputs);
}

// Number of call nodes of `op` in the module's main function.
inline int CountOp(const ir::IRModule& module, const std::string& op) {
  int count = 0;
  for (const ir::Node& node : module.Get("main").nodes) {
    count += node.kind == ir::NodeKind::kCall && node.op == op ? 1 : 0;
  }
  return count;
}

inline int CountCalls(const ir::IRModule& module) {
  int count = 0;
  for (const ir::Node& node : module.Get("main").nodes) {
    count += node.kind == ir::NodeKind::kCall ? 1 : 0;
  }
  return count;
}

// Expects every element of `actual` within `tolerance` of `expected` (same shape).
inline void ExpectNear(const ir::Tensor& actual, const ir::Shape& shape,
                       const std::vector<double>& expected, double tolerance = 1e-5) {
  ASSERT_EQ(actual.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(actual.num_elements()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.GetDouble(static_cast<int64_t>(i)), expected[i], tolerance)
        << "element " << i;
  }
}

// Expects `body` to throw ir::Error whose text contains every one of `parts`.
template <typename Body>
void ExpectError(Body body, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "expected an error containing '" << parts.at(0) << "'";
  } catch (const ir::Error& e) {
    std::string text = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in: " << text;
    }
  }
}

}  // namespace tandem::frontend::testing
