// topk: the k largest (or smallest) elements along one axis and their int64 indices (ONNX
// TopK). The result is a tuple (values, indices).
//
// Order: each element's rank on its line is the number of elements that come before it, where
// a comes before b when it is larger (smaller with largest=0), or equal and at a lower index
// (ONNX's tie rule: the lower index first). Output position p holds the element of rank p, so
// the result is always sorted (sorted=0 allows any order; sorted order is one). A line holding
// NaN gives unspecified results, as for argmax.
#include <fmt/format.h>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

Type InferTopK(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  size_t axis = static_cast<size_t>(OperandAxis(x, attrs));
  Flag(attrs, "largest");
  Flag(attrs, "sorted");
  int64_t k = attrs.GetInt("k");
  if (k < 1 || k > x.shape[axis]) {
    throw Error(fmt::format("k = {} must lie in [1, {}], the extent of axis {} of {}", k,
                            x.shape[axis], axis, ShapeToString(x.shape)));
  }
  Shape shape = x.shape;
  shape[axis] = k;
  return Type::Tuple({TensorType{shape, x.dtype, ""}, TensorType{shape, DataType::kInt64, ""}});
}

std::vector<Tensor> EvaluateTopK(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                 const Type& output) {
  const Tensor& x = inputs.at(0);
  size_t axis = static_cast<size_t>(OperandAxis(x.type(), attrs));
  bool largest = Flag(attrs, "largest");
  auto [outer, extent, inner] = ViewAround(x.shape(), static_cast<int64_t>(axis));
  Tensor values(output.fields().at(0).tensor());
  Tensor indices(output.fields().at(1).tensor());
  int64_t k = values.shape()[axis];
  std::vector<double> line(static_cast<size_t>(extent));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < extent; ++j) {
        line[static_cast<size_t>(j)] = x.GetDouble((o * extent + j) * inner + i);
      }
      for (int64_t j = 0; j < extent; ++j) {
        double v = line[static_cast<size_t>(j)];
        int64_t rank = 0;
        for (int64_t m = 0; m < extent; ++m) {
          double w = line[static_cast<size_t>(m)];
          if ((largest ? w > v : w < v) || (w == v && m < j)) ++rank;
        }
        if (rank >= k) continue;
        int64_t flat = (o * k + rank) * inner + i;
        values.SetDouble(flat, v);
        indices.SetDouble(flat, static_cast<double>(j));
      }
    }
  }
  return {values, indices};
}

}  // namespace

void RegisterTopKOps(OpRegistry& registry) {
  OpDef def;
  def.name = "topk";
  def.doc =
      "ONNX TopK: the k largest (smallest with largest=0) elements along `axis` and their i64 "
      "indices, as the tuple (values, indices) with extent k on the axis; sorted from the "
      "extreme one, equal elements in index order. A line holding NaN gives unspecified "
      "results.";
  def.attrs = {
      {"k", AttrKind::kInt, std::nullopt, "how many elements to keep, in [1, extent]"},
      {"axis", AttrKind::kInt, AttrValue(int64_t{-1}), "the axis (negative from the end)"},
      {"largest", AttrKind::kInt, AttrValue(int64_t{1}), "1: the largest, 0: the smallest"},
      {"sorted", AttrKind::kInt, AttrValue(int64_t{1}),
       "1: sorted; 0 allows any order (the result is sorted either way)"},
  };
  def.pattern = PatternKind::kOpaque;
  def.infer_type = InferTopK;
  def.reference = EvaluateTopK;
  registry.Register(std::move(def));
}

}  // namespace tandem::ir::ops
