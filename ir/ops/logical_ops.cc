// Comparisons, boolean logic and selection: equal, less, greater, less_equal, greater_equal (bool
// results), logical_not, logical_and, logical_or, logical_xor (bool operands and results) and
// where (a bool condition picking between two values). All broadcast their operands with numpy
// rules; these are what an attention mask is built from at run time.
//
// Reference semantics: integer operands compare exactly (i64 values beyond 2^53 included), float
// operands in double, where a NaN compares false (equal included). `where` copies the picked
// element bit for bit.
#include <fmt/format.h>

#include <cstring>

#include "ir/op_registry.h"
#include "ir/ops/elementwise_util.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

enum class Comparison { kEqual, kLess, kGreater, kLessEqual, kGreaterEqual };
enum class Logic { kAnd, kOr, kXor };

Shape BroadcastAll(const std::vector<Type>& inputs) {
  Shape shape;
  for (size_t i = 0; i < inputs.size(); ++i) {
    shape = BroadcastShapes(shape, TensorOperand(inputs, i, std::to_string(i)).shape);
  }
  return shape;
}

void RequireBool(const std::vector<Type>& inputs, size_t index, const std::string& role) {
  const TensorType& t = TensorOperand(inputs, index, role);
  if (t.dtype != DataType::kBool) {
    throw Error(fmt::format("{} must be bool but is {}", role, ToString(t.dtype)));
  }
}

// -1, 0 or 1 ordering a and b; 2 when they are unordered (a NaN).
int Order(const Tensor& a, int64_t i, const Tensor& b, int64_t j) {
  if (!IsFloat(a.dtype())) {
    int64_t x =
        a.dtype() == DataType::kInt64 ? a.data<int64_t>()[i] : static_cast<int64_t>(a.GetDouble(i));
    int64_t y =
        b.dtype() == DataType::kInt64 ? b.data<int64_t>()[j] : static_cast<int64_t>(b.GetDouble(j));
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  double x = a.GetDouble(i), y = b.GetDouble(j);
  return x < y ? -1 : (x > y ? 1 : (x == y ? 0 : 2));
}

bool Holds(Comparison kind, int order) {
  switch (kind) {
    case Comparison::kEqual:
      return order == 0;
    case Comparison::kLess:
      return order == -1;
    case Comparison::kGreater:
      return order == 1;
    case Comparison::kLessEqual:
      return order == -1 || order == 0;
    case Comparison::kGreaterEqual:
      return order == 1 || order == 0;
  }
  return false;
}

void RegisterComparison(OpRegistry& registry, const std::string& name, const std::string& doc,
                        Comparison kind) {
  OpDef def;
  def.name = name;
  def.doc = doc + " Numpy broadcasting; both operands have one dtype; the result is bool.";
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.pattern = PatternKind::kBroadcast;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    CommonDataType(inputs);
    Shape shape = BroadcastAll(inputs);
    return TensorType{shape, DataType::kBool, ResultLayout(inputs, shape)};
  };
  def.reference = [kind](const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const Type& output) -> std::vector<Tensor> {
    const Tensor& a = inputs.at(0);
    const Tensor& b = inputs.at(1);
    Tensor out(output.tensor());
    ForEachIndex(out.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
      int order = Order(a, BroadcastOffset(index, a.shape()), b, BroadcastOffset(index, b.shape()));
      out.data<uint8_t>()[flat] = Holds(kind, order) ? 1 : 0;
    });
    return {out};
  };
  registry.Register(std::move(def));
}

void RegisterLogic(OpRegistry& registry, const std::string& name, const std::string& doc,
                   Logic kind) {
  OpDef def;
  def.name = name;
  def.doc = doc + " Numpy broadcasting; bool operands and result.";
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.pattern = PatternKind::kBroadcast;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    RequireBool(inputs, 0, "a");
    RequireBool(inputs, 1, "b");
    Shape shape = BroadcastAll(inputs);
    return TensorType{shape, DataType::kBool, ResultLayout(inputs, shape)};
  };
  def.reference = [kind](const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const Type& output) -> std::vector<Tensor> {
    return {ApplyBinary(inputs.at(0), inputs.at(1), output.tensor(), [kind](double x, double y) {
      bool p = x != 0, q = y != 0;
      bool r = kind == Logic::kAnd ? (p && q) : (kind == Logic::kOr ? (p || q) : (p != q));
      return r ? 1.0 : 0.0;
    })};
  };
  registry.Register(std::move(def));
}

void RegisterLogicalNot(OpRegistry& registry) {
  OpDef def;
  def.name = "logical_not";
  def.doc = "!x on a bool tensor.";
  def.pattern = PatternKind::kElementwise;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    RequireBool(inputs, 0, "x");
    return InferUnary(inputs, attrs);
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    return {ApplyUnary(inputs.at(0), output.tensor(), [](double x) { return x == 0 ? 1.0 : 0.0; })};
  };
  registry.Register(std::move(def));
}

void RegisterWhere(OpRegistry& registry) {
  OpDef def;
  def.name = "where";
  def.doc =
      "condition ? x : y elementwise (ONNX Where), the three operands broadcast together with "
      "numpy rules; condition is bool, x and y have one dtype, which the result keeps.";
  def.min_inputs = 3;
  def.max_inputs = 3;
  def.pattern = PatternKind::kBroadcast;
  def.infer_type = [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
    RequireBool(inputs, 0, "condition");
    DataType dtype = CommonDataType({inputs.at(1), inputs.at(2)});
    Shape shape = BroadcastAll(inputs);
    return TensorType{shape, dtype, ResultLayout(inputs, shape)};
  };
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    const Tensor& condition = inputs.at(0);
    const Tensor& x = inputs.at(1);
    const Tensor& y = inputs.at(2);
    Tensor out(output.tensor());
    size_t width = static_cast<size_t>(SizeOf(out.dtype()));
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    ForEachIndex(out.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
      bool pick_x = condition.data<uint8_t>()[BroadcastOffset(index, condition.shape())] != 0;
      const Tensor& source = pick_x ? x : y;
      const auto* src = static_cast<const uint8_t*>(source.raw_data());
      std::memcpy(dst + static_cast<size_t>(flat) * width,
                  src + static_cast<size_t>(BroadcastOffset(index, source.shape())) * width, width);
    });
    return {out};
  };
  registry.Register(std::move(def));
}

}  // namespace

void RegisterLogicalOps(OpRegistry& registry) {
  RegisterComparison(registry, "equal", "a == b.", Comparison::kEqual);
  RegisterComparison(registry, "less", "a < b.", Comparison::kLess);
  RegisterComparison(registry, "greater", "a > b.", Comparison::kGreater);
  RegisterComparison(registry, "less_equal", "a <= b.", Comparison::kLessEqual);
  RegisterComparison(registry, "greater_equal", "a >= b.", Comparison::kGreaterEqual);
  RegisterLogic(registry, "logical_and", "a && b.", Logic::kAnd);
  RegisterLogic(registry, "logical_or", "a || b.", Logic::kOr);
  RegisterLogic(registry, "logical_xor", "a != b.", Logic::kXor);
  RegisterLogicalNot(registry);
  RegisterWhere(registry);
}

}  // namespace tandem::ir::ops
