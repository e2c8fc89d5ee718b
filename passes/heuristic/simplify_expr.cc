// SimplifyExpr: local algebraic simplifications. Every rewrite keeps the type of the value it
// replaces (shape, dtype and layout tag) and what it computes, up to float rounding of folded
// constants:
//   - batch_norm folding: a batch_norm whose gamma, beta, mean and variance are constants and
//     whose data is a conv1d/conv2d/conv3d read by nothing else, with a constant weight and the
//     channel axis as the normalized axis, becomes the convolution over a weight scaled per output
//     channel followed by an `add` of a bias constant shaped [O, 1, ...] (one 1 per axis after
//     the channel axis). Any other batch_norm with constant statistics becomes
//     `add(multiply(x, scale), shift)`;
//   - transpose(transpose(x, p), q) is x when the composed permutation is the identity (and x
//     already has the result type), else one transpose; a transpose by the identity disappears;
//   - chains of reshape / flatten / squeeze / expand_dims collapse into one reshape; one whose
//     operand already has its result type disappears;
//   - add or subtract of an all-zero constant, multiply or divide by an all-one constant
//     disappear when broadcasting does not change the other operand's type;
//   - pow(x, c) with c a constant of equal elements that does not broadcast x becomes x for
//     c = 1, sqrt(x) for c = 0.5, and a product of c factors x for c = 2, 3 or 4
//     (multiply(x, x), multiply(multiply(x, x), x), ...): a pow is a libm call per element, a
//     multiply vectorizes;
//   - a reshape that regroups leading axes, row-wise ops and a reshape back (a linear layer
//     applied as `x.view(-1, hidden)`) become the row-wise ops on the original axes
//     (passes/heuristic/row_reshape_pairs.h).
// The local rules are applied in sweeps until nothing changes, then the reshape pairs are
// removed, then the local rules run again where that changed the function.
#include <cmath>
#include <optional>
#include <set>

#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/heuristic/row_reshape_pairs.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

// One sweep's view of a node being rewritten: `fn` is the function before the sweep, `out`
// the function being built and `map` translates fn's ids to out's.
struct Site {
  const ir::GraphFunction& fn;
  const std::vector<int>& uses;
  ir::GraphFunction& out;
  const std::vector<ir::ValueId>& map;
  const ir::Node& node;

  ir::ValueId Operand(size_t index) const { return map[static_cast<size_t>(node.inputs[index])]; }
  const ir::Node& OperandNode(size_t index) const { return out.node(Operand(index)); }
};

bool IsCall(const ir::Node& node, const std::string& op) {
  return node.kind == ir::NodeKind::kCall && node.op == op;
}

// ---- batch_norm ----

// Multiplies every element of `weight` by `scale` of its index along `axis`.
ir::Tensor ScaleAlongAxis(const ir::Tensor& weight, size_t axis, const std::vector<double>& scale) {
  ir::Tensor out(ir::TensorType{weight.shape(), weight.dtype(), ""});
  int64_t inner = 1;
  for (size_t d = axis + 1; d < weight.shape().size(); ++d) inner *= weight.shape()[d];
  int64_t extent = weight.shape()[axis];
  for (int64_t i = 0; i < weight.num_elements(); ++i) {
    out.SetDouble(i, weight.GetDouble(i) * scale[static_cast<size_t>((i / inner) % extent)]);
  }
  return out;
}

// A constant of `dtype` shaped [C, 1, ...] (`trailing` ones) holding `values`.
ir::Tensor ChannelConstant(const std::vector<double>& values, ir::DataType dtype,
                           int64_t trailing) {
  ir::Shape shape{static_cast<int64_t>(values.size())};
  for (int64_t i = 0; i < trailing; ++i) shape.push_back(1);
  return ir::Tensor::FromDoubles(shape, dtype, values);
}

ir::ValueId FoldBatchNorm(const Site& s) {
  if (!IsCall(s.node, "batch_norm")) return -1;
  const ir::TensorType& type = s.node.type.tensor();
  if (!ir::IsFloat(type.dtype)) return -1;
  std::vector<const ir::Tensor*> stats;
  for (size_t i = 1; i <= 4; ++i) {
    stats.push_back(ConstantValue(s.out, s.Operand(i)));
    if (stats.back() == nullptr) return -1;
  }
  if (ConstantValue(s.out, s.Operand(0)) != nullptr) return -1;  // FoldConstant's job
  int64_t axis = s.node.attrs.GetInt("axis");
  if (axis < 0) axis += type.rank();
  double epsilon = s.node.attrs.GetFloat("epsilon");
  size_t channels = static_cast<size_t>(type.shape[static_cast<size_t>(axis)]);
  std::vector<double> scale(channels), shift(channels);
  for (size_t c = 0; c < channels; ++c) {
    int64_t i = static_cast<int64_t>(c);
    scale[c] = stats[0]->GetDouble(i) / std::sqrt(stats[3]->GetDouble(i) + epsilon);
    shift[c] = stats[1]->GetDouble(i) - stats[2]->GetDouble(i) * scale[c];
  }
  int64_t trailing = type.rank() - axis - 1;

  ir::ValueId data = s.node.inputs[0];
  const ir::Node& old_producer = s.fn.node(data);
  const ir::Node& producer = s.OperandNode(0);
  static const std::set<std::string> kConvolutions = {"conv1d", "conv2d", "conv3d"};
  bool is_conv = producer.kind == ir::NodeKind::kCall && kConvolutions.count(producer.op) &&
                 old_producer.kind == ir::NodeKind::kCall && old_producer.op == producer.op &&
                 s.uses[static_cast<size_t>(data)] == 1;
  if (is_conv) {
    const ir::Tensor* weight = ConstantValue(s.out, producer.inputs[1]);
    std::string data_layout = producer.attrs.GetString("data_layout");
    std::string kernel_layout = producer.attrs.GetString("kernel_layout");
    if (weight != nullptr && weight->dtype() == type.dtype &&
        data_layout.find('C') == static_cast<size_t>(axis) &&
        kernel_layout.find('O') != std::string::npos) {
      size_t out_axis = kernel_layout.find('O');
      ir::Node conv = producer;
      conv.inputs[1] = AppendConstant(s.out, ScaleAlongAxis(*weight, out_axis, scale),
                                      s.out.node(producer.inputs[1]).name + "_folded");
      ir::ValueId folded = AppendNode(s.out, std::move(conv));
      ir::ValueId bias = AppendConstant(s.out, ChannelConstant(shift, type.dtype, trailing),
                                        s.node.name + "_bias");
      return AppendCall(s.out, "add", {folded, bias}, {}, s.node.name, s.node.annotations);
    }
  }
  ir::ValueId scale_id =
      AppendConstant(s.out, ChannelConstant(scale, type.dtype, trailing), s.node.name + "_scale");
  ir::ValueId shift_id =
      AppendConstant(s.out, ChannelConstant(shift, type.dtype, trailing), s.node.name + "_shift");
  ir::ValueId scaled = AppendCall(s.out, "multiply", {s.Operand(0), scale_id}, {},
                                  s.node.name + "_scaled", s.node.annotations);
  return AppendCall(s.out, "add", {scaled, shift_id}, {}, s.node.name, s.node.annotations);
}

// ---- transpose ----

// The permutation of a transpose call on a rank-`rank` operand (empty axes: reverse).
std::vector<int64_t> Permutation(const ir::Node& node, int64_t rank) {
  std::vector<int64_t> axes = node.attrs.GetInts("axes");
  if (axes.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    if (a < 0) a += rank;
  }
  return axes;
}

bool IsIdentity(const std::vector<int64_t>& permutation) {
  for (size_t k = 0; k < permutation.size(); ++k) {
    if (permutation[k] != static_cast<int64_t>(k)) return false;
  }
  return true;
}

ir::ValueId SimplifyTranspose(const Site& s) {
  if (!IsCall(s.node, "transpose")) return -1;
  int64_t rank = s.node.type.tensor().rank();
  std::vector<int64_t> permutation = Permutation(s.node, rank);
  const ir::Node& inner = s.OperandNode(0);
  bool pair = IsCall(inner, "transpose");
  ir::ValueId source = pair ? inner.inputs[0] : s.Operand(0);
  if (pair) {
    // Result axis k of the pair is axis p[q[k]] of the source.
    std::vector<int64_t> p = Permutation(inner, rank);
    for (int64_t& axis : permutation) axis = p[static_cast<size_t>(axis)];
  }
  if (IsIdentity(permutation) && s.out.type_of(source) == s.node.type) return source;
  if (!pair) return -1;
  ir::Node composed = s.node;
  composed.inputs = {source};
  composed.attrs.Set("axes", permutation);
  return AppendNode(s.out, std::move(composed));
}

// ---- reshape-like chains ----

ir::ValueId SimplifyReshape(const Site& s) {
  if (!IsReshapeLike(s.node)) return -1;
  const ir::Node& inner = s.OperandNode(0);
  bool chain = IsReshapeLike(inner);
  ir::ValueId source = chain ? inner.inputs[0] : s.Operand(0);
  if (s.out.type_of(source) == s.node.type) return source;
  if (!chain) return -1;
  const ir::Shape& shape = s.node.type.tensor().shape;
  for (int64_t extent : shape) {
    if (extent == 0) return -1;  // newshape would read 0 as "copy the input extent"
  }
  return AppendCall(s.out, "reshape", {source}, ir::Attrs{{"newshape", shape}}, s.node.name,
                    s.node.annotations);
}

// ---- identity arithmetic ----

ir::ValueId SimplifyArithmetic(const Site& s) {
  if (s.node.kind != ir::NodeKind::kCall || s.node.inputs.size() != 2) return -1;
  double neutral;
  bool commutative;
  if (s.node.op == "add" || s.node.op == "subtract") {
    neutral = 0.0;
    commutative = s.node.op == "add";
  } else if (s.node.op == "multiply" || s.node.op == "divide") {
    neutral = 1.0;
    commutative = s.node.op == "multiply";
  } else {
    return -1;
  }
  auto is_neutral = [&](size_t index) {
    const ir::Tensor* value = ConstantValue(s.out, s.Operand(index));
    return value != nullptr && AllElementsEqual(*value, neutral);
  };
  if (is_neutral(1) && s.out.type_of(s.Operand(0)) == s.node.type) return s.Operand(0);
  if (commutative && is_neutral(0) && s.out.type_of(s.Operand(1)) == s.node.type) {
    return s.Operand(1);
  }
  return -1;
}

// ---- powers ----

ir::ValueId SimplifyPower(const Site& s) {
  if (!IsCall(s.node, "pow") || s.out.type_of(s.Operand(0)) != s.node.type) return -1;
  const ir::Tensor* exponent = ConstantValue(s.out, s.Operand(1));
  if (exponent == nullptr || !ir::IsFloat(s.node.type.tensor().dtype)) return -1;
  if (AllElementsEqual(*exponent, 1.0)) return s.Operand(0);
  for (int power = 2; power <= 4; ++power) {
    if (!AllElementsEqual(*exponent, power)) continue;
    // x^2 = x * x; x^3 = x^2 * x; x^4 = x^2 * x^2. The last multiply keeps the node's name.
    ir::ValueId x = s.Operand(0);
    ir::ValueId square = power == 2 ? -1
                                    : AppendCall(s.out, "multiply", {x, x}, {},
                                                 s.node.name + "_square", s.node.annotations);
    std::vector<ir::ValueId> last = power == 2   ? std::vector<ir::ValueId>{x, x}
                                    : power == 3 ? std::vector<ir::ValueId>{square, x}
                                                 : std::vector<ir::ValueId>{square, square};
    return AppendCall(s.out, "multiply", last, {}, s.node.name, s.node.annotations);
  }
  if (AllElementsEqual(*exponent, 0.5)) {
    return AppendCall(s.out, "sqrt", {s.Operand(0)}, {}, s.node.name, s.node.annotations);
  }
  return -1;
}

ir::GraphFunction Simplify(const ir::GraphFunction& fn) {
  std::vector<RewriteRule> rules;
  for (auto rule :
       {FoldBatchNorm, SimplifyTranspose, SimplifyReshape, SimplifyArithmetic, SimplifyPower}) {
    rules.push_back([rule](const ir::GraphFunction& f, const std::vector<int>& uses,
                           ir::GraphFunction& out, const std::vector<ir::ValueId>& map,
                           ir::ValueId id) {
      return rule(Site{f, uses, out, map, f.node(id)});
    });
  }
  ir::GraphFunction simplified = RewriteToFixpoint(fn, rules, 32);
  std::optional<ir::GraphFunction> unpaired = DropRowReshapePairs(simplified);
  if (!unpaired) return simplified;
  return RewriteToFixpoint(*unpaired, rules, 32);
}

}  // namespace

void RegisterSimplifyExpr(PassRegistry& registry) {
  RegisterGraphRewritePass(
      registry, "SimplifyExpr",
      "Fold batch_norm into convolutions or multiply+add, cancel and compose transposes, "
      "collapse reshape chains, remove identity arithmetic, turn pow by 2, 3, 4, 0.5 or 1 into "
      "multiplies, sqrt or nothing, and keep row-wise ops between a reshape that regroups "
      "leading axes and its inverse on the original axes.",
      Simplify);
}

}  // namespace tandem::passes
