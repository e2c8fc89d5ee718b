// Internal to the ONNX importer: the state a converter works on and the table of converters.
//
// A converter turns one ONNX node into graph ops through a NodeContext. Values flow as handles
// into a ValueTable: a value is a graph value, a tensor known at import time, or both. Calls whose
// operands are all known tensors are evaluated at import time with the op's reference semantics
// instead of becoming nodes, so converters get constant folding for free; a known tensor becomes
// a constant node only when a graph op consumes it.
#pragma once

#include <onnx/onnx_pb.h>

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::frontend::onnx_import {

// A handle to a value of the ValueTable.
struct Value {
  int index = -1;
};

// Tensors computed at import time larger than this (in elements) stay graph ops.
inline constexpr int64_t kFoldLimit = int64_t{1} << 24;

class ValueTable {
 public:
  explicit ValueTable(ir::GraphBuilder& builder) : builder_(builder) {}

  // A tensor known at import time; `name` names its constant node if one is needed.
  Value AddConstant(ir::Tensor tensor, const std::string& name);
  // A value computed by the graph.
  Value AddGraphValue(ir::ValueId id);

  // References returned by this table stay valid while it lives.
  bool IsConstant(Value value) const { return entry(value).constant.has_value(); }
  // The tensor of a known value (Error when it is computed by the graph).
  const ir::Tensor& ConstantOf(Value value) const;
  const ir::TensorType& TypeOf(Value value) const { return entry(value).type; }
  // The graph value; a known tensor gets its constant node on first use.
  ir::ValueId Materialize(Value value);
  // The graph value, or -1 for a known tensor without a constant node yet.
  ir::ValueId GraphValueOf(Value value) const { return entry(value).id; }
  // The name a known tensor's constant node gets.
  const std::string& NameOf(Value value) const { return entry(value).name; }

  ir::GraphBuilder& builder() { return builder_; }

 private:
  struct Entry {
    ir::TensorType type;
    ir::ValueId id = -1;
    std::optional<ir::Tensor> constant;
    std::string name;
  };
  const Entry& entry(Value value) const { return entries_.at(static_cast<size_t>(value.index)); }

  ir::GraphBuilder& builder_;
  std::deque<Entry> entries_;  // a deque: references to entries stay valid as values are added
};

// Turns a tensor name of the ONNX file into a graph value name: characters other than letters,
// digits, '_' and '.' become '_', and leading separators are dropped ("/conv1/Conv_output_0" ->
// "conv1_Conv_output_0").
std::string GraphName(const std::string& onnx_name);

class NodeContext {
 public:
  NodeContext(ValueTable& values, const onnx::NodeProto& node,
              std::vector<std::optional<Value>> inputs, int opset);

  const onnx::NodeProto& proto() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int opset() const { return opset_; }

  // Inputs, by position. An input is absent when the node lists fewer inputs or an empty name.
  size_t num_inputs() const { return inputs_.size(); }
  bool HasInput(size_t index) const { return index < inputs_.size() && inputs_[index].has_value(); }
  // Throws Error naming the input when it is absent.
  Value Input(size_t index) const;
  const ir::TensorType& InputType(size_t index) const { return values_.TypeOf(Input(index)); }
  int64_t InputRank(size_t index) const { return InputType(index).rank(); }
  // The tensor of an input that must be known at import time; `role` names it in errors.
  const ir::Tensor& ConstantInput(size_t index, const std::string& role) const;
  // An integer tensor input that must be known at import time, as a list.
  std::vector<int64_t> ConstantInts(size_t index, const std::string& role) const;
  // A one-element input that must be known at import time.
  double ConstantScalar(size_t index, const std::string& role) const;

  // Outputs, by position: wanted when the node names them.
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  bool WantsOutput(size_t index) const {
    return index < num_outputs() && !node_.output(static_cast<int>(index)).empty();
  }

  // Attributes. Reading one marks it used; a node with an attribute no converter read is an
  // error (CheckAttributesUsed), so no attribute is silently ignored. Wrong kinds are errors.
  bool HasAttr(const std::string& name) const { return attributes_.count(name) != 0; }
  int64_t Int(const std::string& name, int64_t fallback);
  double Float(const std::string& name, double fallback);
  std::string String(const std::string& name, const std::string& fallback);
  std::vector<int64_t> Ints(const std::string& name, std::vector<int64_t> fallback);
  std::optional<std::vector<int64_t>> OptionalInts(const std::string& name);
  std::optional<int64_t> OptionalInt(const std::string& name);
  // An int attribute that goes into a 32-bit field (an enum such as Cast's `to`); Fail naming
  // the attribute when its value does not fit, never truncated.
  std::optional<int32_t> OptionalInt32(const std::string& name);
  std::vector<double> Floats(const std::string& name);
  const onnx::TensorProto& TensorAttr(const std::string& name);
  // Marks an attribute read without interpreting it (for ones without effect at inference).
  void Ignore(const std::string& name) { used_.insert(name); }
  void CheckAttributesUsed() const;

  // Emits (or evaluates at import time) a call of registry op `op`.
  Value Call(const std::string& op, const std::vector<Value>& inputs, ir::Attrs attrs = {});
  // A call of an op returning a tuple (split): one value per field.
  std::vector<Value> CallTuple(const std::string& op, const std::vector<Value>& inputs,
                               ir::Attrs attrs = {});
  Value Constant(ir::Tensor tensor);
  // A known tensor of zeros; Error when it has more than kFoldLimit elements.
  Value Zeros(const ir::Shape& shape, ir::DataType dtype);
  // A rank-0 tensor of `dtype` holding `value`.
  Value Scalar(double value, ir::DataType dtype);
  // Reshape with every extent given.
  Value Reshape(Value value, const ir::Shape& shape);

  ValueTable& values() { return values_; }
  const ir::TensorType& TypeOf(Value value) const { return values_.TypeOf(value); }

  [[noreturn]] void Fail(const std::string& message) const;

 private:
  const onnx::AttributeProto* FindAttr(const std::string& name, int expected_type);

  ValueTable& values_;
  const onnx::NodeProto& node_;
  std::vector<std::optional<Value>> inputs_;
  int opset_;
  std::string name_;
  std::map<std::string, const onnx::AttributeProto*> attributes_;
  std::set<std::string> used_;
};

// Converts one node; returns one value per output (it may return fewer when the trailing outputs
// are optional and not wanted).
using Converter = std::vector<Value> (*)(NodeContext& context);

// The converter of an ONNX op that is graph op `kOp` on its one input (Relu, Log, ...).
template <const char* kOp>
std::vector<Value> ConvertUnary(NodeContext& ctx) {
  return {ctx.Call(kOp, {ctx.Input(0)})};
}
// Converters by key: the op type for the default (ai.onnx) domain, "<domain>.<op type>" for
// another domain (ConverterKey).
using ConverterMap = std::map<std::string, Converter>;

// The domain of ONNX Runtime's contrib ops (Gelu, FastGelu, BiasGelu ...).
inline constexpr char kMicrosoftDomain[] = "com.microsoft";

void AddNeuralConverters(ConverterMap& converters);       // onnx_neural_converters.cc
void AddElementwiseConverters(ConverterMap& converters);  // onnx_elementwise_converters.cc
void AddTensorConverters(ConverterMap& converters);       // onnx_tensor_converters.cc
void AddConstantConverters(ConverterMap& converters);     // onnx_constant_converters.cc
void AddIndexConverters(ConverterMap& converters);        // onnx_index_converters.cc

// The converters of the ops common in exported models beyond the basic ones.
void AddReductionConverters(ConverterMap& converters);      // onnx_reduction_converters.cc
void AddNormalizationConverters(ConverterMap& converters);  // onnx_normalization_converters.cc
void AddLayoutConverters(ConverterMap& converters);         // onnx_layout_converters.cc
void AddResizeConverters(ConverterMap& converters);         // onnx_resize_converter.cc
void AddEinsumConverters(ConverterMap& converters);         // onnx_einsum_converter.cc
void AddAttentionConverters(ConverterMap& converters);      // onnx_attention_converter.cc

// Every converter, by key.
const ConverterMap& Converters();
// The key of a node's converter: its op type, prefixed by "<domain>." unless the domain is the
// default one ("" or "ai.onnx").
std::string ConverterKey(const std::string& domain, const std::string& op_type);

// Integer values of an integer tensor (exact for int64).
std::vector<int64_t> TensorToInts(const ir::Tensor& tensor);
// Largest magnitude accepted for window, padding and size values; larger ones could only come
// from a corrupt model and would overflow shape arithmetic.
inline constexpr int64_t kMaxAttributeValue = int64_t{1} << 31;
// Throws Error unless every value lies in [low, kMaxAttributeValue]; `what` names the list.
void CheckRange(const std::vector<int64_t>& values, int64_t low, const std::string& what);
// Multiplies extents, throwing Error when the product overflows.
int64_t CheckedNumElements(const ir::Shape& shape);

}  // namespace tandem::frontend::onnx_import
