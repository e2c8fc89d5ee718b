// Shape ops: one spatial block over each result that reads one operand element per result
// element (index remapping). Concat selects its operand with a select chain over the axis;
// split writes one block per part.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

// First element and step of every axis of a strided_slice (ONNX Slice clamping rules).
void PlanSlice(const OpCall& call, std::vector<int64_t>& start, std::vector<int64_t>& step) {
  const ir::Shape& shape = call.input_types[0].shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t>& begin = call.attrs.GetInts("begin");
  const std::vector<int64_t>& strides = call.attrs.GetInts("strides");
  std::vector<int64_t> axes = call.attrs.GetInts("axes");
  if (axes.empty()) {
    for (size_t i = 0; i < begin.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  start.assign(shape.size(), 0);
  step.assign(shape.size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t axis = static_cast<size_t>(ir::ops::NormalizeAxis(axes[i], rank));
    int64_t extent = shape[axis];
    int64_t first = begin[i] < 0 ? begin[i] + extent : begin[i];
    step[axis] = strides[i];
    if (extent == 0) continue;
    start[axis] = strides[i] > 0 ? std::clamp<int64_t>(first, 0, extent)
                                 : std::clamp<int64_t>(first, 0, extent - 1);
  }
}

}  // namespace

void LowerReshapeLike(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const ir::Buffer& out = call.outputs[0];
  builder.Compute(call.op, out, AxisNames(out->shape.size()), [&](const std::vector<Var>& i) {
    return ir::Load(x, ReshapeIndex(i, out->shape, x->shape));
  });
}

void LowerTranspose(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> permutation = call.attrs.GetInts("axes");
  if (permutation.empty()) {
    for (int64_t k = rank - 1; k >= 0; --k) permutation.push_back(k);
  }
  builder.Compute(
      "transpose", call.outputs[0], AxisNames(x->shape.size()), [&](const std::vector<Var>& i) {
        std::vector<Expr> index(x->shape.size());
        for (size_t k = 0; k < permutation.size(); ++k) {
          index[static_cast<size_t>(ir::ops::NormalizeAxis(permutation[k], rank))] = i[k];
        }
        return ir::Load(x, index);
      });
}

void LowerConcat(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& out = call.outputs[0];
  size_t axis = static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(out->shape.size())));
  // Operands with elements on the axis, with the offset at which each begins.
  std::vector<std::pair<ir::Buffer, int64_t>> parts;
  int64_t offset = 0;
  for (const ir::Buffer& x : call.inputs) {
    if (x->shape[axis] > 0) parts.emplace_back(x, offset);
    offset += x->shape[axis];
  }
  if (parts.empty()) parts.emplace_back(call.inputs[0], 0);
  builder.Compute("concat", out, AxisNames(out->shape.size()), [&](const std::vector<Var>& i) {
    auto load = [&](const std::pair<ir::Buffer, int64_t>& part) {
      std::vector<Expr> index(i.begin(), i.end());
      index[axis] = AddConst(i[axis], -part.second);
      return ir::Load(part.first, index);
    };
    Expr value = load(parts.back());
    for (size_t p = parts.size() - 1; p-- > 0;) {
      value = ir::Select(i[axis] < Expr(parts[p + 1].second), load(parts[p]), value);
    }
    return value;
  });
}

void LowerSplit(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  size_t axis = static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(x->shape.size())));
  int64_t offset = 0;
  for (const ir::Buffer& part : call.outputs) {
    builder.Compute("split", part, AxisNames(x->shape.size()), [&](const std::vector<Var>& i) {
      std::vector<Expr> index(i.begin(), i.end());
      index[axis] = AddConst(i[axis], offset);
      return ir::Load(x, index);
    });
    offset += part->shape[axis];
  }
}

void LowerStridedSlice(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  std::vector<int64_t> start, step;
  PlanSlice(call, start, step);
  builder.Compute("strided_slice", call.outputs[0], AxisNames(x->shape.size()),
                  [&](const std::vector<Var>& i) {
                    std::vector<Expr> index;
                    for (size_t k = 0; k < i.size(); ++k) {
                      index.push_back(AddConst(MulConst(i[k], step[k]), start[k]));
                    }
                    return ir::Load(x, index);
                  });
}

void LowerPad(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const std::vector<int64_t>& pads = call.attrs.GetInts("pad_width");
  const std::string& mode = call.attrs.GetString("mode");
  if (mode != "constant" && mode != "edge" && mode != "reflect") {
    throw LoweringError(call.op, fmt::format("mode \"{}\" is unknown", mode));
  }
  size_t rank = x->shape.size();
  Expr fill = Constant(x->dtype, call.attrs.GetFloat("pad_value"));
  builder.Compute("pad", call.outputs[0], AxisNames(rank), [&](const std::vector<Var>& i) {
    std::vector<Expr> index;
    std::vector<Expr> inside;
    for (size_t k = 0; k < rank; ++k) {
      int64_t begin = pads[k];
      int64_t end = pads[rank + k];
      int64_t extent = x->shape[k];
      Expr position = AddConst(i[k], -begin);
      if (mode == "constant") {
        if (begin > 0) inside.push_back(i[k] >= Expr(begin));
        if (end > 0) inside.push_back(i[k] < Expr(begin + extent));
      } else if (mode == "edge") {
        if (begin > 0) position = ir::Max(position, Expr(0));
        if (end > 0) position = ir::Min(position, Expr(extent - 1));
      } else {
        Expr mirrored = position;
        if (end > 0) {
          mirrored =
              ir::Select(position >= Expr(extent), Expr(2 * (extent - 1)) - position, mirrored);
        }
        if (begin > 0) mirrored = ir::Select(position < Expr(0), Expr(0) - position, mirrored);
        position = mirrored;
      }
      index.push_back(position);
    }
    Expr load = ir::Load(x, index);
    Expr condition = All(inside);
    return condition.defined() ? ir::Select(condition, load, fill) : load;
  });
}

}  // namespace tandem::kernels
