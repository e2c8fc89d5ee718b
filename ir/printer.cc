#include "ir/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/kernel/kernel_printer.h"
#include "ir/lexer.h"
#include "ir/structural.h"

namespace tandem::ir {
namespace {

// Constants with at most this many elements print as a decimal list; larger ones as base64.
constexpr int64_t kMaxListElements = 16;

using text::AttrDictText;
using text::KeyText;
using text::NameText;

// A float element in shortest round-trip form, always with '.', 'e' or "inf" (never NaN here).
std::string FloatElementText(std::string text) {
  if (text.find_first_of(".eEin") == std::string::npos) text += ".0";
  return text;
}

template <typename T>
T Load(const Tensor& tensor, int64_t index) {
  T value;
  std::memcpy(&value, tensor.bytes().data() + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

// The decimal list of a small constant, or "" when it cannot round-trip bytewise as decimals
// (NaN payloads, bool bytes other than 0 and 1).
std::string DecimalListText(const Tensor& tensor) {
  std::vector<std::string> parts;
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    std::string part;
    switch (tensor.dtype()) {
      case DataType::kFloat32: {
        float v = Load<float>(tensor, i);
        if (std::isnan(v)) return "";
        part = FloatElementText(fmt::format("{}", v));
        break;
      }
      case DataType::kFloat64: {
        double v = Load<double>(tensor, i);
        if (std::isnan(v)) return "";
        part = FloatElementText(fmt::format("{}", v));
        break;
      }
      case DataType::kFloat16: {
        float v = HalfToFloat(Load<uint16_t>(tensor, i));
        if (std::isnan(v)) return "";
        part = FloatElementText(fmt::format("{}", v));
        break;
      }
      case DataType::kInt8:
        part = std::to_string(Load<int8_t>(tensor, i));
        break;
      case DataType::kUInt8:
        part = std::to_string(Load<uint8_t>(tensor, i));
        break;
      case DataType::kInt32:
        part = std::to_string(Load<int32_t>(tensor, i));
        break;
      case DataType::kInt64:
        part = std::to_string(Load<int64_t>(tensor, i));
        break;
      case DataType::kBool: {
        uint8_t v = Load<uint8_t>(tensor, i);
        if (v > 1) return "";
        part = v != 0 ? "true" : "false";
        break;
      }
    }
    parts.push_back(std::move(part));
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string ConstantDataText(const Tensor& tensor, const PrintOptions& options) {
  if (!tensor.defined()) return "elided";
  if (options.max_constant_bytes >= 0 && tensor.num_bytes() > options.max_constant_bytes) {
    return "elided";
  }
  if (tensor.num_elements() <= kMaxListElements) {
    std::string list = DecimalListText(tensor);
    if (!list.empty()) return list;
  }
  return "base64\"" + text::EncodeBase64(tensor.bytes()) + "\"";
}

class FunctionPrinter {
 public:
  FunctionPrinter(const GraphFunction& function, const PrintOptions& options)
      : function_(function), options_(options), order_(CanonicalNodeOrder(function)) {
    names_.resize(function.nodes.size());
    for (size_t i = 0; i < function.nodes.size(); ++i) names_[i] = function.nodes[i].name;
    if (options.canonical_names) {
      for (size_t position = 0; position < order_.size(); ++position) {
        names_[static_cast<size_t>(order_[position])] = std::to_string(position);
      }
    }
  }

  std::string Print() {
    std::string out = "graph " + NameText('@', function_.name) + "(";
    // CanonicalNodeOrder starts with the distinct valid parameters.
    size_t num_params = 0;
    std::vector<bool> seen(function_.nodes.size(), false);
    for (ValueId param : function_.params) {
      if (!Valid(param) || seen[static_cast<size_t>(param)]) continue;
      seen[static_cast<size_t>(param)] = true;
      const Node& node = function_.node(param);
      if (num_params++ > 0) out += ", ";
      out += Value(param) + ": " + PrintType(node.type) + Suffix(node.attrs, node.annotations);
    }
    out += ") -> ";
    out += Valid(function_.output) ? PrintType(function_.type_of(function_.output)) : "()";
    if (!function_.attrs.empty()) out += " attributes " + AttrDictText(function_.attrs);
    out += " {\n";
    for (size_t position = num_params; position < order_.size(); ++position) {
      out += "  " + Statement(order_[position]) + "\n";
    }
    out += "  return " + Value(function_.output) + "\n}\n";
    return out;
  }

 private:
  bool Valid(ValueId id) const {
    return id >= 0 && static_cast<size_t>(id) < function_.nodes.size();
  }

  // Out-of-range references only occur in broken IR; they print as a name no node has.
  std::string Value(ValueId id) const {
    if (!Valid(id)) return NameText('%', fmt::format("<invalid {}>", id));
    return NameText('%', names_[static_cast<size_t>(id)]);
  }

  static std::string Suffix(const Attrs& attrs, const Attrs& annotations) {
    std::string out;
    if (!attrs.empty()) out += " " + AttrDictText(attrs);
    if (!annotations.empty()) out += " @" + AttrDictText(annotations);
    return out;
  }

  std::string Operands(const Node& node) const {
    std::vector<std::string> parts;
    for (ValueId input : node.inputs) parts.push_back(Value(input));
    return fmt::format("({})", fmt::join(parts, ", "));
  }

  std::string Statement(ValueId id) const {
    const Node& node = function_.node(id);
    std::string out = Value(id) + " = ";
    switch (node.kind) {
      case NodeKind::kInput:  // an input that is not a parameter (broken IR)
        return out + "input " + PrintType(node.type) + Suffix(node.attrs, node.annotations);
      case NodeKind::kConstant:
        return out + "constant " + PrintType(node.type) + " " +
               ConstantDataText(node.value, options_) + Suffix(node.attrs, node.annotations);
      case NodeKind::kCall:
        out += node.op;
        break;
      case NodeKind::kTuple:
        out += "tuple";
        break;
      case NodeKind::kTupleGetItem:
        out += "tuple_get_item";
        break;
      case NodeKind::kCallKernel:
      case NodeKind::kCallExtern:
        out += ToString(node.kind) + " " + NameText('@', node.callee);
        if (!node.op.empty()) out += " " + KeyText(node.op);
        break;
    }
    out += Operands(node);
    if (!node.attrs.empty()) out += " " + AttrDictText(node.attrs);
    out += " : " + PrintType(node.type);
    if (!node.annotations.empty()) out += " @" + AttrDictText(node.annotations);
    return out;
  }

  const GraphFunction& function_;
  const PrintOptions& options_;
  std::vector<ValueId> order_;
  std::vector<std::string> names_;
};

}  // namespace

std::string PrintType(const Type& type) {
  if (type.is_tuple()) {
    std::vector<std::string> parts;
    for (const Type& field : type.fields()) parts.push_back(PrintType(field));
    return fmt::format("({})", fmt::join(parts, ", "));
  }
  const TensorType& tensor = type.tensor();
  std::string out = ToString(tensor.dtype) + ShapeToString(tensor.shape);
  if (!tensor.layout.empty()) out += "{" + KeyText(tensor.layout) + "}";
  return out;
}

std::string PrintFunction(const GraphFunction& function, const PrintOptions& options) {
  return FunctionPrinter(function, options).Print();
}

std::string PrintModule(const IRModule& module, const PrintOptions& options) {
  std::string out = "module";
  if (!module.attrs().empty()) out += " attributes " + AttrDictText(module.attrs());
  out += " {\n";
  bool first = true;
  for (const auto& [name, function] : module.graph_functions()) {
    if (!first) out += "\n";
    first = false;
    out += PrintFunction(*function, options);
  }
  for (const auto& [name, kernel] : module.kernel_functions()) {
    if (!first) out += "\n";
    first = false;
    out += PrintKernel(*kernel);
  }
  return out + "}\n";
}

}  // namespace tandem::ir
