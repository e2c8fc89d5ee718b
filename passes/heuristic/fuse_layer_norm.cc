// FuseLayerNorm: recognizes layer normalization written out as elementary ops (as ONNX
// exporters before opset 17 write it) and replaces it with one `layer_norm` call, which runs as
// one kernel (or one oneDNN primitive) instead of six passes over the data.
//
// The rewrites, applied in sweeps until nothing changes:
//   - the normalization
//         m = mean(x, axes=A, keepdims=1);  d = subtract(x, m)
//         v = mean(pow(d, 2) | multiply(d, d), axes=A, keepdims=1)
//         y = divide(d, sqrt(add(v, eps)))          (add in either operand order)
//     becomes layer_norm(x, ones, zeros) {axis=min(A), epsilon=eps}, when A is the trailing axes
//     [axis, rank) of x, eps is a constant scalar, x has a float type and no layout tag, and the
//     intermediates m, d, v, the squares and the sqrt are read by nothing outside the pattern;
//   - multiply(layer_norm(x, g, b), c) becomes layer_norm(x, g*c, b*c), and add / subtract of c
//     becomes layer_norm(x, g, b +/- c), when g, b and c are constants, c broadcasts over the
//     normalized axes only (the result keeps the layer_norm's type) and the layer_norm is read by
//     nothing else.
// Each rewrite computes the same values up to float rounding: the variance is the mean of the
// squared deviations in both forms.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

struct Sweep {
  const ir::GraphFunction& fn;
  const std::vector<int>& uses;
  ir::GraphFunction& out;
  const std::vector<ir::ValueId>& map;

  const ir::Node& Node(ir::ValueId id) const { return fn.node(id); }
  bool IsCall(ir::ValueId id, const std::string& op) const {
    const ir::Node& node = fn.node(id);
    return node.kind == ir::NodeKind::kCall && node.op == op;
  }
  bool UsedOnce(ir::ValueId id) const { return uses[static_cast<size_t>(id)] == 1; }
  // The single value of a constant with every element equal, else nullopt.
  std::optional<double> Scalar(ir::ValueId id) const {
    const ir::Tensor* value = ConstantValue(fn, id);
    if (value == nullptr || value->num_elements() == 0) return std::nullopt;
    double first = value->GetDouble(0);
    if (!AllElementsEqual(*value, first)) return std::nullopt;
    return first;
  }
};

// The first normalized axis when `node` is a keepdims mean over the trailing axes of its
// operand, else nullopt.
std::optional<int64_t> TrailingMeanAxis(const ir::Node& node, int64_t rank) {
  if (node.attrs.GetInt("keepdims") != 1) return std::nullopt;
  std::vector<int64_t> axes = node.attrs.GetInts("axes");
  if (axes.empty()) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(k)) {
      return std::nullopt;
    }
  }
  return axes.front();
}

ir::ValueId FuseNormalization(const Sweep& s, ir::ValueId id) {
  const ir::Node& divide = s.Node(id);
  if (!s.IsCall(id, "divide")) return -1;
  ir::ValueId d = divide.inputs[0];
  ir::ValueId root = divide.inputs[1];
  if (!s.IsCall(d, "subtract") || !s.IsCall(root, "sqrt") || !s.UsedOnce(root)) return -1;
  ir::ValueId x = s.Node(d).inputs[0];
  ir::ValueId m = s.Node(d).inputs[1];
  const ir::TensorType& type = s.fn.type_of(x).tensor();
  if (!ir::IsFloat(type.dtype) || !type.layout.empty() || type.rank() < 1) return -1;
  if (s.fn.type_of(d) != s.fn.type_of(x) || divide.type != s.fn.type_of(x)) return -1;
  if (!s.IsCall(m, "mean") || s.Node(m).inputs[0] != x || !s.UsedOnce(m)) return -1;
  std::optional<int64_t> axis = TrailingMeanAxis(s.Node(m), type.rank());
  if (!axis) return -1;

  ir::ValueId sum = s.Node(root).inputs[0];
  if (!s.IsCall(sum, "add") || !s.UsedOnce(sum)) return -1;
  ir::ValueId v = s.Node(sum).inputs[0];
  std::optional<double> epsilon = s.Scalar(s.Node(sum).inputs[1]);
  if (!epsilon) {
    v = s.Node(sum).inputs[1];
    epsilon = s.Scalar(s.Node(sum).inputs[0]);
  }
  if (!epsilon || !std::isfinite(*epsilon) || *epsilon < 0) return -1;
  if (s.fn.type_of(sum) != s.fn.type_of(m)) return -1;  // eps must not broadcast the variance
  if (!s.IsCall(v, "mean") || !s.UsedOnce(v)) return -1;
  if (TrailingMeanAxis(s.Node(v), type.rank()) != axis) return -1;
  ir::ValueId square = s.Node(v).inputs[0];
  if (!s.UsedOnce(square) || s.fn.type_of(square) != s.fn.type_of(x)) return -1;
  const ir::Node& square_node = s.Node(square);
  bool is_square =
      (s.IsCall(square, "pow") && square_node.inputs[0] == d &&
       s.Scalar(square_node.inputs[1]) == 2.0) ||
      (s.IsCall(square, "multiply") && square_node.inputs[0] == d && square_node.inputs[1] == d);
  if (!is_square) return -1;
  // d is read by the square (once or twice) and by the divide, nothing else.
  int square_reads = s.IsCall(square, "multiply") ? 2 : 1;
  if (s.uses[static_cast<size_t>(d)] != square_reads + 1) return -1;

  ir::Shape normalized(type.shape.begin() + *axis, type.shape.end());
  ir::TensorType parameter_type{normalized, type.dtype, ""};
  ir::Tensor ones(parameter_type), zeros(parameter_type);
  for (int64_t i = 0; i < ones.num_elements(); ++i) {
    ones.SetDouble(i, 1.0);
    zeros.SetDouble(i, 0.0);
  }
  ir::ValueId gamma = AppendConstant(s.out, ones, divide.name + "_gamma");
  ir::ValueId beta = AppendConstant(s.out, zeros, divide.name + "_beta");
  return AppendCall(s.out, "layer_norm", {s.map[static_cast<size_t>(x)], gamma, beta},
                    ir::Attrs{{"axis", *axis}, {"epsilon", *epsilon}}, divide.name,
                    divide.annotations);
}

// multiply / add / subtract of a constant after a layer_norm, folded into its gamma and beta.
ir::ValueId FoldAffine(const Sweep& s, ir::ValueId id) {
  const ir::Node& node = s.Node(id);
  bool multiply = s.IsCall(id, "multiply");
  bool add = s.IsCall(id, "add");
  bool subtract = s.IsCall(id, "subtract");
  if (!multiply && !add && !subtract) return -1;
  size_t norm_index = 0;
  if (!s.IsCall(node.inputs[0], "layer_norm")) {
    if (subtract || !s.IsCall(node.inputs[1], "layer_norm")) return -1;
    norm_index = 1;
  }
  ir::ValueId norm = node.inputs[norm_index];
  const ir::Tensor* c = ConstantValue(s.fn, node.inputs[1 - norm_index]);
  if (c == nullptr || !s.UsedOnce(norm) || node.type != s.fn.type_of(norm)) return -1;
  const ir::Node& old_norm = s.Node(norm);
  const ir::Node& new_norm = s.out.node(s.map[static_cast<size_t>(norm)]);
  const ir::Tensor* gamma = ConstantValue(s.out, new_norm.inputs[1]);
  const ir::Tensor* beta = ConstantValue(s.out, new_norm.inputs[2]);
  if (gamma == nullptr || beta == nullptr || c->dtype() != gamma->dtype()) return -1;
  // c may only broadcast over the normalized axes: drop its leading extent-1 axes beyond them.
  ir::Shape c_shape = c->shape();
  while (c_shape.size() > gamma->shape().size()) {
    if (c_shape.front() != 1) return -1;
    c_shape.erase(c_shape.begin());
  }
  ir::Tensor constant = EvaluateConstant("reshape", {*c}, ir::Attrs{{"newshape", c_shape}});
  ir::Tensor new_gamma = *gamma, new_beta = *beta;
  try {
    if (multiply) {
      new_gamma = EvaluateConstant("multiply", {*gamma, constant}, {});
      new_beta = EvaluateConstant("multiply", {*beta, constant}, {});
    } else {
      new_beta = EvaluateConstant(add ? "add" : "subtract", {*beta, constant}, {});
    }
  } catch (const ir::Error&) {
    return -1;  // c does not broadcast against the normalized shape
  }
  if (new_gamma.shape() != gamma->shape() || new_beta.shape() != beta->shape()) return -1;
  ir::ValueId gamma_id = AppendConstant(s.out, new_gamma, node.name + "_gamma");
  ir::ValueId beta_id = AppendConstant(s.out, new_beta, node.name + "_beta");
  return AppendCall(s.out, "layer_norm", {new_norm.inputs[0], gamma_id, beta_id}, old_norm.attrs,
                    node.name, node.annotations);
}

ir::GraphFunction FuseLayerNorm(const ir::GraphFunction& fn) {
  std::vector<RewriteRule> rules;
  for (auto rule : {FuseNormalization, FoldAffine}) {
    rules.push_back([rule](const ir::GraphFunction& f, const std::vector<int>& uses,
                           ir::GraphFunction& out, const std::vector<ir::ValueId>& map,
                           ir::ValueId id) {
      return rule(Sweep{f, uses, out, map}, id);
    });
  }
  return RewriteToFixpoint(fn, rules, 8);
}

}  // namespace

void RegisterFuseLayerNorm(PassRegistry& registry) {
  RegisterGraphRewritePass(
      registry, "FuseLayerNorm",
      "Replace layer normalization written as mean/subtract/pow/mean/add/sqrt/divide "
      "(and a following constant scale and shift) with one layer_norm call.",
      FuseLayerNorm);
}

}  // namespace tandem::passes
