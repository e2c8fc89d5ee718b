#include "frontend/onnx_convert.h"

#include <fmt/format.h>

#include <limits>

#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace tandem::frontend::onnx_import {

using ir::Error;

Value ValueTable::AddConstant(ir::Tensor tensor, const std::string& name) {
  Entry entry;
  entry.type = ir::TensorType{tensor.shape(), tensor.dtype(), ""};
  entry.constant = std::move(tensor);
  entry.name = name;
  entries_.push_back(std::move(entry));
  return Value{static_cast<int>(entries_.size() - 1)};
}

Value ValueTable::AddGraphValue(ir::ValueId id) {
  Entry entry;
  entry.type = builder_.TensorTypeOf(id);
  entry.id = id;
  entries_.push_back(std::move(entry));
  return Value{static_cast<int>(entries_.size() - 1)};
}

const ir::Tensor& ValueTable::ConstantOf(Value value) const {
  const Entry& e = entry(value);
  if (!e.constant) throw Error("internal: the value is not known at import time");
  return *e.constant;
}

ir::ValueId ValueTable::Materialize(Value value) {
  Entry& e = entries_.at(static_cast<size_t>(value.index));
  if (e.id < 0) e.id = builder_.Constant(*e.constant, e.name);
  return e.id;
}

std::string GraphName(const std::string& onnx_name) {
  std::string name;
  for (char c : onnx_name) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.';
    if (!keep && name.empty()) continue;
    name += keep ? c : '_';
  }
  return name;
}

std::vector<int64_t> TensorToInts(const ir::Tensor& tensor) {
  std::vector<int64_t> out(static_cast<size_t>(tensor.num_elements()));
  if (tensor.dtype() == ir::DataType::kInt64) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = tensor.data<int64_t>()[i];
  } else if (tensor.dtype() == ir::DataType::kInt32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = tensor.data<int32_t>()[i];
  } else {
    throw Error(fmt::format("expected an integer tensor but got {}", ir::ToString(tensor.type())));
  }
  return out;
}

void CheckRange(const std::vector<int64_t>& values, int64_t low, const std::string& what) {
  for (int64_t v : values) {
    if (v < low || v > kMaxAttributeValue) {
      throw Error(fmt::format("{} [{}] must lie in [{}, {}]", what, fmt::join(values, ","), low,
                              kMaxAttributeValue));
    }
  }
}

int64_t CheckedNumElements(const ir::Shape& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) {
      throw Error(fmt::format("shape {} is invalid or too large", ir::ShapeToString(shape)));
    }
  }
  return count;
}

NodeContext::NodeContext(ValueTable& values, const onnx::NodeProto& node,
                         std::vector<std::optional<Value>> inputs, int opset)
    : values_(values), node_(node), inputs_(std::move(inputs)), opset_(opset) {
  for (const std::string& output : node.output()) {
    if (!output.empty()) {
      name_ = GraphName(output);
      break;
    }
  }
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (!attributes_.emplace(attr.name(), &attr).second) {
      Fail(fmt::format("attribute '{}' is given twice", attr.name()));
    }
  }
}

void NodeContext::Fail(const std::string& message) const {
  throw Error(message);
}

Value NodeContext::Input(size_t index) const {
  if (!HasInput(index)) {
    Fail(fmt::format("{} needs input {} but the node does not give it", op_type(), index));
  }
  return *inputs_[index];
}

const ir::Tensor& NodeContext::ConstantInput(size_t index, const std::string& role) const {
  Value value = Input(index);
  if (!values_.IsConstant(value)) {
    Fail(
        fmt::format("input {} ('{}', the {}) of {} must be known at import time (an "
                    "initializer or computed from constants), but it is computed by the graph",
                    index, node_.input(static_cast<int>(index)), role, op_type()));
  }
  return values_.ConstantOf(value);
}

std::vector<int64_t> NodeContext::ConstantInts(size_t index, const std::string& role) const {
  const ir::Tensor& tensor = ConstantInput(index, role);
  if (tensor.dtype() != ir::DataType::kInt64 && tensor.dtype() != ir::DataType::kInt32) {
    Fail(fmt::format("the {} of {} must be an integer tensor but is {}", role, op_type(),
                     ir::ToString(tensor.type())));
  }
  if (tensor.rank() > 1) {
    Fail(fmt::format("the {} of {} must be a 1-D tensor but is {}", role, op_type(),
                     ir::ToString(tensor.type())));
  }
  return TensorToInts(tensor);
}

double NodeContext::ConstantScalar(size_t index, const std::string& role) const {
  const ir::Tensor& tensor = ConstantInput(index, role);
  if (tensor.num_elements() != 1) {
    Fail(fmt::format("the {} of {} must hold one value but is {}", role, op_type(),
                     ir::ToString(tensor.type())));
  }
  return tensor.GetDouble(0);
}

namespace {

int AttributeTypeOf(const onnx::AttributeProto& attr) {
  if (attr.type() != onnx::AttributeProto::UNDEFINED) return attr.type();
  // Old files may leave the type out; infer it from the field that is set.
  if (attr.has_f()) return onnx::AttributeProto::FLOAT;
  if (attr.has_i()) return onnx::AttributeProto::INT;
  if (attr.has_s()) return onnx::AttributeProto::STRING;
  if (attr.has_t()) return onnx::AttributeProto::TENSOR;
  if (attr.has_g()) return onnx::AttributeProto::GRAPH;
  if (attr.floats_size() > 0) return onnx::AttributeProto::FLOATS;
  if (attr.ints_size() > 0) return onnx::AttributeProto::INTS;
  if (attr.strings_size() > 0) return onnx::AttributeProto::STRINGS;
  return onnx::AttributeProto::UNDEFINED;
}

std::string AttributeTypeName(int type) {
  if (onnx::AttributeProto_AttributeType_IsValid(type)) {
    return onnx::AttributeProto_AttributeType_Name(
        static_cast<onnx::AttributeProto_AttributeType>(type));
  }
  return fmt::format("unknown ({})", type);
}

}  // namespace

const onnx::AttributeProto* NodeContext::FindAttr(const std::string& name, int expected_type) {
  auto it = attributes_.find(name);
  if (it == attributes_.end()) return nullptr;
  used_.insert(name);
  int type = AttributeTypeOf(*it->second);
  // An empty list has no field set; it reads as either list kind.
  bool empty_list =
      type == onnx::AttributeProto::UNDEFINED && (expected_type == onnx::AttributeProto::INTS ||
                                                  expected_type == onnx::AttributeProto::FLOATS);
  if (type != expected_type && !empty_list) {
    Fail(fmt::format("attribute '{}' of {} must be {} but is {}", name, op_type(),
                     AttributeTypeName(expected_type), AttributeTypeName(type)));
  }
  return it->second;
}

int64_t NodeContext::Int(const std::string& name, int64_t fallback) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::INT);
  return attr ? attr->i() : fallback;
}

std::optional<int64_t> NodeContext::OptionalInt(const std::string& name) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::INT);
  return attr ? std::optional<int64_t>(attr->i()) : std::nullopt;
}

std::optional<int32_t> NodeContext::OptionalInt32(const std::string& name) {
  std::optional<int64_t> value = OptionalInt(name);
  if (value && (*value < std::numeric_limits<int32_t>::min() ||
                *value > std::numeric_limits<int32_t>::max())) {
    Fail(fmt::format("attribute '{}' of {} is {}, which does not fit a 32-bit integer", name,
                     op_type(), *value));
  }
  return value ? std::optional<int32_t>(static_cast<int32_t>(*value)) : std::nullopt;
}

double NodeContext::Float(const std::string& name, double fallback) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::FLOAT);
  return attr ? attr->f() : fallback;
}

std::string NodeContext::String(const std::string& name, const std::string& fallback) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::STRING);
  return attr ? attr->s() : fallback;
}

std::vector<int64_t> NodeContext::Ints(const std::string& name, std::vector<int64_t> fallback) {
  std::optional<std::vector<int64_t>> values = OptionalInts(name);
  return values ? *values : fallback;
}

std::optional<std::vector<int64_t>> NodeContext::OptionalInts(const std::string& name) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::INTS);
  if (!attr) return std::nullopt;
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::vector<double> NodeContext::Floats(const std::string& name) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::FLOATS);
  if (!attr) return {};
  return std::vector<double>(attr->floats().begin(), attr->floats().end());
}

const onnx::TensorProto& NodeContext::TensorAttr(const std::string& name) {
  const auto* attr = FindAttr(name, onnx::AttributeProto::TENSOR);
  if (!attr) Fail(fmt::format("{} needs attribute '{}'", op_type(), name));
  return attr->t();
}

void NodeContext::CheckAttributesUsed() const {
  for (const auto& [name, attr] : attributes_) {
    if (used_.count(name) == 0) {
      Fail(fmt::format("unsupported attribute '{}' of {}", name, op_type()));
    }
  }
}

Value NodeContext::Call(const std::string& op, const std::vector<Value>& inputs, ir::Attrs attrs) {
  std::vector<Value> results = CallTuple(op, inputs, std::move(attrs));
  if (results.size() != 1) Fail(fmt::format("internal: {} returned {} values", op, results.size()));
  return results[0];
}

std::vector<Value> NodeContext::CallTuple(const std::string& op, const std::vector<Value>& inputs,
                                          ir::Attrs attrs) {
  bool known = !inputs.empty();
  for (Value v : inputs) known = known && values_.IsConstant(v);
  if (known) {
    std::vector<ir::Type> types;
    std::vector<ir::Tensor> operands;
    for (Value v : inputs) {
      types.push_back(values_.TypeOf(v));
      operands.push_back(values_.ConstantOf(v));
    }
    ir::Attrs normalized = attrs;
    ir::Type type = ir::InferCallType(op, types, normalized);
    int64_t elements = 0;
    bool small = true;
    std::vector<ir::Type> fields = type.is_tensor() ? std::vector<ir::Type>{type} : type.fields();
    for (const ir::Type& field : fields) {
      small = small && field.is_tensor();
      if (small) elements += field.tensor().num_elements();
    }
    if (small && elements <= kFoldLimit) {
      std::vector<ir::Tensor> results = ir::EvaluateReference(op, operands, normalized, type);
      if (results.size() != fields.size()) {
        Fail(fmt::format("internal: the reference of {} returned {} tensors for {}", op,
                         results.size(), ir::ToString(type)));
      }
      std::vector<Value> out;
      for (ir::Tensor& t : results) out.push_back(values_.AddConstant(std::move(t), name_));
      return out;
    }
  }
  std::vector<ir::ValueId> ids;
  for (Value v : inputs) ids.push_back(values_.Materialize(v));
  ir::GraphBuilder& builder = values_.builder();
  ir::ValueId id = builder.Call(op, ids, std::move(attrs), name_);
  ir::Type type = builder.TypeOf(id);  // a copy: TupleGetItem below grows the node list
  if (type.is_tensor()) return {values_.AddGraphValue(id)};
  std::vector<Value> out;
  for (size_t i = 0; i < type.fields().size(); ++i) {
    if (!type.fields()[i].is_tensor()) Fail(fmt::format("internal: {} returned nested tuples", op));
    out.push_back(values_.AddGraphValue(builder.TupleGetItem(id, static_cast<int64_t>(i), name_)));
  }
  return out;
}

Value NodeContext::Constant(ir::Tensor tensor) {
  return values_.AddConstant(std::move(tensor), name_);
}

Value NodeContext::Zeros(const ir::Shape& shape, ir::DataType dtype) {
  if (CheckedNumElements(shape) > kFoldLimit) {
    Fail(fmt::format("{} would need a constant of shape {}, which is too large", op_type(),
                     ir::ShapeToString(shape)));
  }
  return Constant(ir::Tensor(shape, dtype));
}

Value NodeContext::Scalar(double value, ir::DataType dtype) {
  ir::Tensor t(ir::Shape{}, dtype);
  t.SetDouble(0, value);
  return Constant(std::move(t));
}

Value NodeContext::Reshape(Value value, const ir::Shape& shape) {
  if (TypeOf(value).shape == shape) return value;
  if (values_.IsConstant(value)) {  // keeps the name: a reshaped weight is still that weight
    return values_.AddConstant(values_.ConstantOf(value).Reshaped(shape), values_.NameOf(value));
  }
  return Call("reshape", {value}, {{"newshape", shape}});
}

const ConverterMap& Converters() {
  static const ConverterMap* converters = [] {
    auto* map = new ConverterMap();
    AddNeuralConverters(*map);
    AddElementwiseConverters(*map);
    AddTensorConverters(*map);
    AddConstantConverters(*map);
    AddIndexConverters(*map);
    AddReductionConverters(*map);
    AddNormalizationConverters(*map);
    AddLayoutConverters(*map);
    AddResizeConverters(*map);
    AddEinsumConverters(*map);
    AddAttentionConverters(*map);
    return map;
  }();
  return *converters;
}

std::string ConverterKey(const std::string& domain, const std::string& op_type) {
  if (domain.empty() || domain == "ai.onnx") return op_type;
  return domain + "." + op_type;
}

}  // namespace tandem::frontend::onnx_import
