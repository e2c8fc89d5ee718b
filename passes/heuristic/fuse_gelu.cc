// FuseGelu: recognizes GELU written out as elementary ops, the exact form
//     0.5 * x * (1 + erf(x / sqrt(2)))
// with x / sqrt(2) also written x * (1 / sqrt(2)), and the tanh form of GPT-2's exports
//     0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
// with x^3 written pow(x, 3) or as two multiplies (SimplifyExpr's form), in any grouping and
// operand order of the three factors (0.5, x and 1 + erf(...) or 1 + tanh(...)) and of every
// sum and product inside; it replaces either with one `gelu` call (approximate="none" or
// "tanh"). A gelu is one elementwise op that oneDNN takes as a post-op of the matmul before it
// and that our code generator computes with its vectorized erf or tanh.
//
// It fires only when the erf, the 1 + erf and the inner products are read by nothing outside
// the pattern and every value has x's type (no broadcasting hidden in the pattern); constants
// must equal 0.5, 1, sqrt(2) (or 1/sqrt(2)), sqrt(2 / pi) and 0.044715 to within 1e-6
// relative.
#include <cmath>
#include <numbers>
#include <optional>

#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

struct Matcher {
  const ir::GraphFunction& fn;
  const std::vector<int>& uses;

  bool IsCall(ir::ValueId id, const std::string& op) const {
    const ir::Node& node = fn.node(id);
    return node.kind == ir::NodeKind::kCall && node.op == op && node.inputs.size() >= 1;
  }
  bool UsedOnce(ir::ValueId id) const { return uses[static_cast<size_t>(id)] == 1; }
  bool IsConstant(ir::ValueId id, double expected) const {
    const ir::Tensor* value = ConstantValue(fn, id);
    if (value == nullptr || value->num_elements() != 1) return false;
    return std::abs(value->GetDouble(0) - expected) <= 1e-6 * std::abs(expected);
  }

  // Flattens a product of single-use multiplies of type `type` rooted at `id` into its factors.
  void Factors(ir::ValueId id, const ir::Type& type, bool root,
               std::vector<ir::ValueId>& factors) const {
    if (IsCall(id, "multiply") && (root || UsedOnce(id)) && fn.type_of(id) == type) {
      for (ir::ValueId operand : fn.node(id).inputs) Factors(operand, type, false, factors);
      return;
    }
    factors.push_back(id);
  }

  // x when `id` is 1 + erf(x / sqrt(2)) (or erf(x * 1/sqrt(2)) + 1), else nullopt.
  std::optional<ir::ValueId> ErfTerm(ir::ValueId id) const {
    if (!IsCall(id, "add") || !UsedOnce(id)) return std::nullopt;
    const ir::Node& add = fn.node(id);
    ir::ValueId erf = IsConstant(add.inputs[0], 1.0) ? add.inputs[1] : add.inputs[0];
    ir::ValueId one = erf == add.inputs[0] ? add.inputs[1] : add.inputs[0];
    if (!IsConstant(one, 1.0) || !IsCall(erf, "erf") || !UsedOnce(erf)) return std::nullopt;
    ir::ValueId scaled = fn.node(erf).inputs[0];
    if (!UsedOnce(scaled)) return std::nullopt;
    const ir::Node& scale = fn.node(scaled);
    if (IsCall(scaled, "divide") && IsConstant(scale.inputs[1], std::sqrt(2.0))) {
      return scale.inputs[0];
    }
    if (IsCall(scaled, "multiply")) {
      for (size_t k = 0; k < 2; ++k) {
        if (IsConstant(scale.inputs[k], 1.0 / std::sqrt(2.0))) return scale.inputs[1 - k];
      }
    }
    return std::nullopt;
  }

  // The operands of a single-use binary `op` call `id` with one operand the constant `value`:
  // the other operand, or nullopt.
  std::optional<ir::ValueId> WithConstant(ir::ValueId id, const std::string& op,
                                          double value) const {
    if (!IsCall(id, op) || !UsedOnce(id) || fn.node(id).inputs.size() != 2) return std::nullopt;
    const ir::Node& node = fn.node(id);
    for (size_t k = 0; k < 2; ++k) {
      if (IsConstant(node.inputs[k], value)) return node.inputs[1 - k];
    }
    return std::nullopt;
  }

  // Whether `id` is x^3: pow(x, 3), multiply(multiply(x, x), x) or multiply(x, multiply(x, x)).
  bool IsCube(ir::ValueId id, ir::ValueId x) const {
    if (!UsedOnce(id)) return false;
    const ir::Node& node = fn.node(id);
    if (IsCall(id, "pow")) return node.inputs[0] == x && IsConstant(node.inputs[1], 3.0);
    if (!IsCall(id, "multiply") || node.inputs.size() != 2) return false;
    for (size_t k = 0; k < 2; ++k) {
      ir::ValueId square = node.inputs[k];
      if (node.inputs[1 - k] == x && IsCall(square, "multiply") && UsedOnce(square) &&
          fn.node(square).inputs == std::vector<ir::ValueId>{x, x}) {
        return true;
      }
    }
    return false;
  }

  // x when `id` is 1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)), else nullopt.
  std::optional<ir::ValueId> TanhTerm(ir::ValueId id) const {
    std::optional<ir::ValueId> tanh = WithConstant(id, "add", 1.0);
    if (!tanh || !IsCall(*tanh, "tanh") || !UsedOnce(*tanh)) return std::nullopt;
    std::optional<ir::ValueId> inner =
        WithConstant(fn.node(*tanh).inputs[0], "multiply", std::sqrt(2.0 / std::numbers::pi));
    if (!inner || !IsCall(*inner, "add") || !UsedOnce(*inner)) return std::nullopt;
    const ir::Node& sum = fn.node(*inner);
    for (size_t k = 0; k < 2; ++k) {
      ir::ValueId x = sum.inputs[k];
      std::optional<ir::ValueId> cube = WithConstant(sum.inputs[1 - k], "multiply", 0.044715);
      if (cube && IsCube(*cube, x)) return x;
    }
    return std::nullopt;
  }
};

ir::GraphFunction FuseGelu(const ir::GraphFunction& fn) {
  std::vector<int> uses = UseCounts(fn);
  Matcher matcher{fn, uses};
  return RewriteNodes(fn,
                      [&](ir::ValueId id, ir::GraphFunction& out,
                          const std::vector<ir::ValueId>& map) -> ir::ValueId {
                        const ir::Node& node = fn.node(id);
                        if (!matcher.IsCall(id, "multiply") || !node.type.is_tensor()) return -1;
                        if (!ir::IsFloat(node.type.tensor().dtype)) return -1;
                        std::vector<ir::ValueId> factors;
                        matcher.Factors(id, node.type, /*root=*/true, factors);
                        if (factors.size() != 3) return -1;
                        for (size_t half = 0; half < 3; ++half) {
                          if (!matcher.IsConstant(factors[half], 0.5)) continue;
                          for (size_t term = 0; term < 3; ++term) {
                            if (term == half) continue;
                            ir::ValueId other = factors[3 - half - term];
                            if (fn.type_of(other) != node.type) continue;
                            for (const char* form : {"none", "tanh"}) {
                              std::optional<ir::ValueId> x = std::string(form) == "none"
                                                                 ? matcher.ErfTerm(factors[term])
                                                                 : matcher.TanhTerm(factors[term]);
                              if (!x || *x != other) continue;
                              return AppendCall(out, "gelu", {map[static_cast<size_t>(other)]},
                                                ir::Attrs{{"approximate", std::string(form)}},
                                                node.name, node.annotations);
                            }
                          }
                        }
                        return -1;
                      });
}

}  // namespace

void RegisterFuseGelu(PassRegistry& registry) {
  RegisterGraphRewritePass(
      registry, "FuseGelu",
      "Replace 0.5 * x * (1 + erf(x / sqrt(2))) and 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + "
      "0.044715 * x^3))) written as elementary ops with one gelu call.",
      FuseGelu);
}

}  // namespace tandem::passes
