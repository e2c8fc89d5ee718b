// layout_transform: moves a tensor between two layouts of the same primal axes.
#include <fmt/format.h>

#include "ir/layout.h"
#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

Type InferLayoutTransform(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  Layout source(attrs.GetString("src_layout"));
  Layout target(attrs.GetString("dst_layout"));
  if (!x.layout.empty() && x.layout != source.name()) {
    throw Error(fmt::format("the operand is in layout '{}' but src_layout is '{}'", x.layout,
                            source.name()));
  }
  return TensorType{ConvertShape(x.shape, source, target), x.dtype, target.name()};
}

}  // namespace

void RegisterLayoutOps(OpRegistry& registry) {
  OpDef def;
  def.name = "layout_transform";
  def.doc =
      "Relayouts `x` from src_layout to dst_layout (e.g. NCHW -> NCHW8c); both name the same "
      "primal axes and every split factor of dst_layout divides its axis. The result type "
      "carries dst_layout; an operand that carries a layout must carry src_layout.";
  def.attrs = {
      {"src_layout", AttrKind::kString, std::nullopt, "layout of the operand"},
      {"dst_layout", AttrKind::kString, std::nullopt, "layout of the result"},
  };
  def.pattern = PatternKind::kInjective;
  def.infer_type = InferLayoutTransform;
  def.reference = [](const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Type& output) -> std::vector<Tensor> {
    Layout source(attrs.GetString("src_layout"));
    Layout target(attrs.GetString("dst_layout"));
    return {TransformLayout(inputs.at(0), source, target)};
  };
  registry.Register(std::move(def));
}

}  // namespace tandem::ir::ops
