// Converter of ONNX Einsum into transposes, reshapes, sums and batched matrix products.
//
// Supported: any number of operands, explicit ("ij,jk->ik") and implicit ("ij,jk") outputs,
// and "..." for leading or trailing axes. Not supported (an error naming the equation): a label
// repeated within one operand (a diagonal) and a label whose extents differ between operands
// (broadcasting an extent of 1).
//
// Algorithm:
//   1. Parse the equation into one label list per operand and one for the output; "..." becomes
//      labels of its own, as many as the operand's rank leaves.
//   2. Sum out, in each operand, the labels no other operand and not the output name.
//   3. Fold the operands left to right. Two terms A and B become one batched matmul: the labels
//      both hold and something later needs are the batch, the labels both hold and nothing later
//      needs are contracted, the others are A's rows or B's columns. A is transposed to
//      [batch, rows, contracted] and B to [batch, contracted, columns], both flattened to 3-D,
//      multiplied, and the product reshaped back to [batch, rows, columns].
//   4. Transpose the result into the output's label order.
// Transposes and reshapes that would not move anything are left out, so the attention
// contractions ("bhid,bhjd->bhij", "bhij,bhjd->bhid") become one matmul and at most one
// transpose.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "frontend/onnx_convert.h"
#include "ir/error.h"

namespace tandem::frontend::onnx_import {
namespace {

using ir::Attrs;
using ir::Shape;

// A value and the label of each of its axes.
struct Term {
  Value value;
  std::string labels;
};

struct Equation {
  std::vector<std::string> operands;
  std::string output;
};

// Step 1. Labels are letters; "..." expands to digits '0', '1', ... (the same digit names the
// same axis of the broadcast part in every operand).
Equation ParseEquation(NodeContext& ctx, const std::string& text,
                       const std::vector<int64_t>& ranks) {
  auto fail = [&](const std::string& why) {
    ctx.Fail(fmt::format("Einsum equation '{}': {}", text, why));
  };
  std::string compact;
  for (char c : text) {
    if (c != ' ') compact += c;
  }
  size_t arrow = compact.find("->");
  std::string left = compact.substr(0, arrow);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = left.find(',', start);
    parts.push_back(left.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() != ranks.size()) {
    fail(fmt::format("{} operand terms for {} inputs", parts.size(), ranks.size()));
  }
  // The axes "..." stands for in each term; the broadcast part is right-aligned across terms.
  std::vector<int64_t> extra(parts.size(), 0);
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    size_t dots = parts[i].find("...");
    if (dots == std::string::npos) continue;
    extra[i] = ranks[i] - static_cast<int64_t>(parts[i].size() - 3);
    if (extra[i] < 0 || extra[i] > 10) fail("the rank does not fit the labels around '...'");
    ellipsis_rank = std::max(ellipsis_rank, extra[i]);
  }
  auto expand = [&](const std::string& part, int64_t count) {
    std::string broadcast;
    for (int64_t i = 0; i < count; ++i) {
      broadcast += static_cast<char>('0' + (ellipsis_rank - count) + i);
    }
    size_t dots = part.find("...");
    std::string labels =
        dots == std::string::npos ? part : part.substr(0, dots) + broadcast + part.substr(dots + 3);
    for (char c : labels) {
      if (!std::isalnum(static_cast<unsigned char>(c)) ||
          (std::isdigit(static_cast<unsigned char>(c)) && broadcast.find(c) == std::string::npos)) {
        fail(fmt::format("'{}' is not a label", c));
      }
    }
    return labels;
  };
  Equation eq;
  for (size_t i = 0; i < parts.size(); ++i) {
    eq.operands.push_back(expand(parts[i], extra[i]));
    if (static_cast<int64_t>(eq.operands.back().size()) != ranks[i]) {
      fail(fmt::format("term '{}' does not match input {} of rank {}", parts[i], i, ranks[i]));
    }
    std::set<char> seen;
    for (char c : eq.operands.back()) {
      if (!seen.insert(c).second) {
        fail(fmt::format("label '{}' repeats within one term (diagonals are not supported)", c));
      }
    }
  }
  if (arrow != std::string::npos) {
    eq.output = expand(compact.substr(arrow + 2), ellipsis_rank);
    std::set<char> seen;
    for (char c : eq.output) {
      if (!seen.insert(c).second) fail(fmt::format("label '{}' repeats in the output", c));
    }
    return eq;
  }
  // Implicit output: the broadcast axes, then the labels used once, in alphabetical order.
  std::map<char, int> uses;
  for (const std::string& labels : eq.operands) {
    for (char c : labels) ++uses[c];
  }
  for (const auto& [c, count] : uses) {
    if (std::isdigit(static_cast<unsigned char>(c))) eq.output += c;
  }
  for (const auto& [c, count] : uses) {
    if (std::isalpha(static_cast<unsigned char>(c)) && count == 1) eq.output += c;
  }
  return eq;
}

// `term` transposed so that its labels read `order` (a permutation of them).
Term Arrange(NodeContext& ctx, const Term& term, const std::string& order) {
  if (order == term.labels) return term;
  std::vector<int64_t> axes;
  for (char c : order) axes.push_back(static_cast<int64_t>(term.labels.find(c)));
  return {ctx.Call("transpose", {term.value}, Attrs{{"axes", axes}}), order};
}

// `term` with the labels outside `keep` summed out (step 2).
Term SumOut(NodeContext& ctx, const Term& term, const std::set<char>& keep) {
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t i = 0; i < term.labels.size(); ++i) {
    if (keep.count(term.labels[i])) {
      kept += term.labels[i];
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return term;
  return {ctx.Call("sum", {term.value}, Attrs{{"axes", axes}, {"keepdims", int64_t{0}}}), kept};
}

// The product of the extents of `labels`.
int64_t Extent(const std::map<char, int64_t>& extents, const std::string& labels) {
  int64_t product = 1;
  for (char c : labels) product *= extents.at(c);
  return product;
}

// Step 3 for one pair: A and B multiplied, keeping the labels in `keep`.
Term Contract(NodeContext& ctx, const Term& a, const Term& b, const std::set<char>& keep,
              const std::map<char, int64_t>& extents) {
  std::string batch, rows, contracted, columns;
  for (char c : a.labels) {
    bool shared = b.labels.find(c) != std::string::npos;
    (shared ? (keep.count(c) ? batch : contracted) : rows) += c;
  }
  for (char c : b.labels) {
    if (a.labels.find(c) == std::string::npos) columns += c;
  }
  Term left = Arrange(ctx, a, batch + rows + contracted);
  Term right = Arrange(ctx, b, batch + contracted + columns);
  int64_t nb = Extent(extents, batch), m = Extent(extents, rows);
  int64_t k = Extent(extents, contracted), n = Extent(extents, columns);
  Value product = ctx.Call(
      "matmul", {ctx.Reshape(left.value, {nb, m, k}), ctx.Reshape(right.value, {nb, k, n})});
  std::string labels = batch + rows + columns;
  Shape shape;
  for (char c : labels) shape.push_back(extents.at(c));
  return {ctx.Reshape(product, shape), labels};
}

std::vector<Value> ConvertEinsum(NodeContext& ctx) {
  std::string text = ctx.String("equation", "");
  if (ctx.num_inputs() == 0) ctx.Fail("Einsum needs at least one input");
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) ranks.push_back(ctx.InputRank(i));
  Equation eq = ParseEquation(ctx, text, ranks);
  std::map<char, int64_t> extents;
  std::vector<Term> terms;
  for (size_t i = 0; i < eq.operands.size(); ++i) {
    const Shape& shape = ctx.InputType(i).shape;
    if (ctx.InputType(i).dtype != ctx.InputType(0).dtype) {
      ctx.Fail(fmt::format("Einsum inputs 0 and {} differ in dtype", i));
    }
    for (size_t k = 0; k < shape.size(); ++k) {
      char c = eq.operands[i][k];
      auto [it, inserted] = extents.emplace(c, shape[k]);
      if (!inserted && it->second != shape[k]) {
        ctx.Fail(
            fmt::format("Einsum equation '{}': label '{}' has extents {} and {} (broadcasting "
                        "is not supported)",
                        text, c, it->second, shape[k]));
      }
    }
    terms.push_back({ctx.Input(i), eq.operands[i]});
  }
  for (char c : eq.output) {
    if (!extents.count(c))
      ctx.Fail(fmt::format("Einsum equation '{}': output label '{}' is in no input", text, c));
  }
  // The labels needed after operand i: the output's and those of the operands after it.
  auto needed_after = [&](size_t i) {
    std::set<char> keep(eq.output.begin(), eq.output.end());
    for (size_t j = i + 1; j < terms.size(); ++j)
      keep.insert(terms[j].labels.begin(), terms[j].labels.end());
    return keep;
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    std::set<char> keep = needed_after(i);
    for (size_t j = 0; j < i; ++j) keep.insert(terms[j].labels.begin(), terms[j].labels.end());
    terms[i] = SumOut(ctx, terms[i], keep);
  }
  Term result = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    std::set<char> keep = needed_after(i);
    std::set<char> keep_left = keep, keep_right = keep;
    keep_left.insert(terms[i].labels.begin(), terms[i].labels.end());
    keep_right.insert(result.labels.begin(), result.labels.end());
    Term left = SumOut(ctx, result, keep_left);
    Term right = SumOut(ctx, terms[i], keep_right);
    result = Contract(ctx, left, right, keep, extents);
  }
  result = SumOut(ctx, result, std::set<char>(eq.output.begin(), eq.output.end()));
  return {Arrange(ctx, result, eq.output).value};
}

}  // namespace

void AddEinsumConverters(ConverterMap& converters) {
  converters["Einsum"] = ConvertEinsum;
}

}  // namespace tandem::frontend::onnx_import
