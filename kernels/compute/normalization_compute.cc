// Normalizations.
//   batch_norm: one spatial block using the [C] stat tensors.
//   layer_norm: "layer_norm_mean" and "layer_norm_variance" reduce over the normalized axes into
//               intermediates, "layer_norm" normalizes.
//   softmax:    "softmax_max" reduces along the axis, "softmax_exp" computes exp(x - max),
//               "softmax_exp_sum" sums it along the axis, "softmax" normalizes it.
// Integer data is normalized in f64 and cast back; intermediates use that math type.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/ops/op_util.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {

using ir::Expr;
using ir::Var;

namespace {

ir::Shape Slice(const ir::Shape& shape, size_t begin, size_t end) {
  return ir::Shape(shape.begin() + static_cast<int64_t>(begin),
                   shape.begin() + static_cast<int64_t>(end));
}

std::vector<Expr> Concat(const std::vector<Var>& a, const std::vector<Var>& b) {
  std::vector<Expr> out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

void LowerBatchNorm(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  size_t axis = static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(data->shape.size())));
  ir::DataType dtype = data->dtype;
  ir::DataType math = MathType(dtype);
  double epsilon = call.attrs.GetFloat("epsilon");
  builder.Compute(
      "batch_norm", call.outputs[0], AxisNames(data->shape.size()), [&](const std::vector<Var>& i) {
        auto stat = [&](size_t operand) {
          return ir::Cast(math, ir::Load(call.inputs[operand], {i[axis]}));
        };
        Expr x = ir::Cast(math, ir::Load(data, i));
        Expr deviation = ir::Call("sqrt", {stat(4) + ir::FloatImm(epsilon, math)}, math);
        return ir::Cast(dtype, (x - stat(3)) / deviation * stat(1) + stat(2));
      });
}

void LowerLayerNorm(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& data = call.inputs[0];
  const ir::Buffer& gamma = call.inputs[1];
  const ir::Buffer& beta = call.inputs[2];
  const ir::Shape& shape = data->shape;
  size_t rank = shape.size();
  size_t axis = static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(rank)));
  ir::DataType dtype = data->dtype;
  ir::DataType math = MathType(dtype);
  double epsilon = call.attrs.GetFloat("epsilon");
  ir::Shape outer = Slice(shape, 0, axis);
  std::vector<ReduceAxis> normalized;
  int64_t count = 1;
  for (size_t k = axis; k < rank; ++k) {
    normalized.push_back(ReduceAxis{fmt::format("k{}", k - axis), shape[k]});
    count *= shape[k];
  }
  Expr inverse_count = ir::FloatImm(1.0 / static_cast<double>(count), math);
  ir::Buffer mean = builder.AddIntermediate(data->name + "_mean", math, outer);
  ir::Buffer variance = builder.AddIntermediate(data->name + "_variance", math, outer);
  std::vector<std::string> outer_names = AxisNames(axis);

  auto x_at = [&](const std::vector<Var>& s, const std::vector<Var>& r) {
    return ir::Cast(math, ir::Load(data, Concat(s, r)));
  };
  builder.Reduce("layer_norm_mean", mean, outer_names, normalized, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   return x_at(s, r) * inverse_count;
                 });
  builder.Reduce("layer_norm_variance", variance, outer_names, normalized, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   Expr d = x_at(s, r) - ir::Load(mean, s);
                   return d * d * inverse_count;
                 });
  builder.Compute("layer_norm", call.outputs[0], AxisNames(rank), [&](const std::vector<Var>& i) {
    std::vector<Var> s(i.begin(), i.begin() + static_cast<int64_t>(axis));
    std::vector<Var> r(i.begin() + static_cast<int64_t>(axis), i.end());
    Expr deviation = ir::Call("sqrt", {ir::Load(variance, s) + ir::FloatImm(epsilon, math)}, math);
    Expr normalized_value =
        (x_at(s, r) - ir::Load(mean, s)) * (ir::FloatImm(1.0, math) / deviation);
    Expr g = ir::Cast(math, ir::Load(gamma, r));
    Expr b = ir::Cast(math, ir::Load(beta, r));
    return ir::Cast(dtype, normalized_value * g + b);
  });
}

void LowerSoftmax(ComputeBuilder& builder, const OpCall& call) {
  const ir::Buffer& x = call.inputs[0];
  const ir::Shape& shape = x->shape;
  size_t rank = shape.size();
  size_t axis = static_cast<size_t>(
      ir::ops::NormalizeAxis(call.attrs.GetInt("axis"), static_cast<int64_t>(rank)));
  ir::DataType dtype = x->dtype;
  ir::DataType math = MathType(dtype);
  ir::Shape reduced_shape = shape;
  reduced_shape.erase(reduced_shape.begin() + static_cast<int64_t>(axis));
  ir::Buffer maximum = builder.AddIntermediate(x->name + "_max", math, reduced_shape);
  ir::Buffer sum = builder.AddIntermediate(x->name + "_exp_sum", math, reduced_shape);
  std::vector<std::string> names = AxisNames(rank - 1);
  std::vector<ReduceAxis> along = {ReduceAxis{"k", shape[axis]}};

  // x at the position of the reduced-shape index `s` with `a` on the softmax axis.
  auto x_at = [&](const std::vector<Var>& s, const Expr& a) {
    std::vector<Expr> index(s.begin(), s.end());
    index.insert(index.begin() + static_cast<int64_t>(axis), a);
    return ir::Cast(math, ir::Load(x, index));
  };
  builder.Reduce(
      "softmax_max", maximum, names, along, Reducer::kMax,
      [&](const std::vector<Var>& s, const std::vector<Var>& r) { return x_at(s, r[0]); });
  // exp(x - max) once, kept for the sum and the quotient (the default schedules keep a costly
  // block read by two others separate rather than inline it twice).
  ir::Buffer exponential = builder.AddIntermediate(x->name + "_exp", math, shape);
  builder.Compute("softmax_exp", exponential, AxisNames(rank), [&](const std::vector<Var>& i) {
    std::vector<Var> s = i;
    s.erase(s.begin() + static_cast<int64_t>(axis));
    return ir::Call("exp", {x_at(s, i[axis]) - ir::Load(maximum, s)}, math);
  });
  auto exponential_at = [&](const std::vector<Var>& s, const Expr& a) {
    std::vector<Expr> index(s.begin(), s.end());
    index.insert(index.begin() + static_cast<int64_t>(axis), a);
    return ir::Load(exponential, index);
  };
  builder.Reduce("softmax_exp_sum", sum, names, along, Reducer::kSum,
                 [&](const std::vector<Var>& s, const std::vector<Var>& r) {
                   return exponential_at(s, r[0]);
                 });
  builder.Compute("softmax", call.outputs[0], AxisNames(rank), [&](const std::vector<Var>& i) {
    std::vector<Var> s = i;
    s.erase(s.begin() + static_cast<int64_t>(axis));
    Expr e = exponential_at(s, i[axis]);
    return ir::Cast(dtype, e * (ir::FloatImm(1.0, math) / ir::Load(sum, s)));
  });
}

}  // namespace tandem::kernels
