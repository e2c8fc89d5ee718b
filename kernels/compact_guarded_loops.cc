#include "kernels/compact_guarded_loops.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "ir/kernel/functor.h"
#include "ir/kernel/simplify.h"
#include "kernels/dynamic_access.h"

namespace tandem::kernels {

namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

// The digit floormod(floordiv(f, stride), extent) of a loop variable f.
struct Digit {
  int64_t stride = 1;
  int64_t extent = 1;
  auto operator<=>(const Digit&) const = default;
};

// The digit of `f` (a loop of `loop_extent` iterations) that `e` is, when it is one. The
// outermost digit's extent is what the loop reaches (floordiv(f, 11) of a loop of 352: 32).
std::optional<Digit> DigitOf(const Expr& e, const ir::Var& f, int64_t loop_extent) {
  auto is_f = [&](const Expr& x) { return x.get() == f.get(); };
  int64_t stride = 1;
  int64_t extent = loop_extent;
  Expr inner = e;
  if (e->kind == ExprKind::kFloorMod) {
    if (!ir::AsConstInt(e->operands[1], &extent) || extent <= 0) return std::nullopt;
    inner = e->operands[0];
  }
  if (inner->kind == ExprKind::kFloorDiv) {
    if (!is_f(inner->operands[0]) || !ir::AsConstInt(inner->operands[1], &stride) || stride <= 0) {
      return std::nullopt;
    }
  } else if (!is_f(inner)) {
    return std::nullopt;
  }
  if (stride >= loop_extent) return std::nullopt;  // always 0
  if (stride * extent >= loop_extent) {
    // The outermost digit: its values must make whole blocks of the digits below.
    if (loop_extent % stride != 0) return std::nullopt;
    extent = loop_extent / stride;
  }
  return Digit{stride, extent};
}

// For `a * digit + b < limit` (a > 0; b and limit without f): the digit and the number of its
// values that pass, ceil((limit - b) / a) (possibly negative or above the digit's extent).
std::optional<std::pair<Digit, Expr>> BoundOf(const Expr& condition, const ir::Var& f,
                                              int64_t loop_extent) {
  if (condition->kind != ExprKind::kLT || ir::UsesVar(condition->operands[1], f)) {
    return std::nullopt;
  }
  std::vector<std::pair<int64_t, Expr>> terms;
  int64_t constant = 0;
  dynamic_access::LinearTerms(condition->operands[0], 1, terms, constant);
  std::optional<size_t> digit_term;
  for (size_t t = 0; t < terms.size(); ++t) {
    if (!ir::UsesVar(terms[t].second, f)) continue;
    if (digit_term) return std::nullopt;  // f in two terms
    digit_term = t;
  }
  if (!digit_term || terms[*digit_term].first <= 0) return std::nullopt;
  std::optional<Digit> digit = DigitOf(terms[*digit_term].second, f, loop_extent);
  if (!digit) return std::nullopt;
  int64_t a = terms[*digit_term].first;
  Expr rest = Expr(constant);
  for (size_t t = 0; t < terms.size(); ++t) {
    if (t != *digit_term) rest = rest + Expr(terms[t].first) * terms[t].second;
  }
  Expr passing = condition->operands[1] - rest;
  if (a > 1) passing = ir::FloorDiv(passing + Expr(a - 1), Expr(a));
  return std::make_pair(*digit, passing);
}

}  // namespace

// Steps (for one loop):
//   1. the conditions of the ifs without else that make up the loop's body, split at &&;
//   2. each condition that bounds a digit of f gives the number of the digit's values that
//      pass (the smallest, for a digit bounded twice), clamped to [0, extent]; the others stay
//      as conditions in the body;
//   3. the bounded digits must nest, with the unbounded digits between them and above them as
//      whole places, and one bounded digit must not be the outermost (a bound on the outermost
//      alone is a prefix, which GuardLoops already made a trip count);
//   4. g's places, lowest first, are the places of f with each bounded digit's radix its number
//      of passing values; f is recomposed from g's digits with f's strides.
std::optional<CompactedLoop> CompactGuardedLoop(const ir::ForNode& loop) {
  const ir::Var& f = loop.loop_var;
  // 1.
  std::vector<Expr> conditions;
  Stmt inside = loop.body;
  while (const auto* branch = ir::As<ir::IfThenElseNode>(inside)) {
    if (branch->else_case) break;
    for (const Expr& conjunct : ir::Conjuncts(branch->condition)) conditions.push_back(conjunct);
    inside = branch->then_case;
  }
  if (conditions.empty()) return std::nullopt;
  // 2.
  std::map<Digit, Expr> passing;
  std::vector<Expr> others;
  for (const Expr& condition : conditions) {
    std::optional<std::pair<Digit, Expr>> bound = BoundOf(condition, f, loop.extent);
    // A bound on f itself is a prefix: with other bounds it stays a condition.
    bool whole = bound && bound->first.stride == 1 && bound->first.extent == loop.extent;
    if (!bound || whole || ir::LoadsBufferStoredIn(bound->second, inside)) {
      others.push_back(condition);
      continue;
    }
    auto [it, inserted] = passing.emplace(bound->first, bound->second);
    if (!inserted) it->second = ir::Min(it->second, bound->second);
  }
  if (passing.empty()) return std::nullopt;
  // 3.
  std::vector<CompactedLoop::Place> places;
  int64_t covered = 1;  // f's places so far are worth [0, covered)
  bool below_outermost = false;
  for (const auto& [digit, count] : passing) {
    if (digit.stride < covered || digit.stride % covered != 0) return std::nullopt;
    if (digit.stride > covered) places.push_back({Expr(digit.stride / covered), covered});
    places.push_back({ir::Simplify(ir::Max(ir::Min(count, Expr(digit.extent)), Expr(int64_t{0}))),
                      digit.stride});
    covered = digit.stride * digit.extent;
    below_outermost = below_outermost || covered < loop.extent;
  }
  if (!below_outermost || loop.extent % covered != 0) return std::nullopt;
  if (loop.extent > covered) places.push_back({Expr(loop.extent / covered), covered});
  // 4.
  CompactedLoop compacted;
  compacted.active = ir::MakeVar(f->name + "_active", f->dtype);
  compacted.places = places;
  compacted.count = places[0].radix;
  for (size_t p = 1; p < places.size(); ++p) compacted.count = compacted.count * places[p].radix;
  Expr rest = compacted.active;
  for (size_t p = 0; p < places.size(); ++p) {
    bool last = p + 1 == places.size();
    Expr digit = last ? rest : ir::FloorMod(rest, places[p].radix);
    Expr term = places[p].stride == 1 ? digit : digit * Expr(places[p].stride);
    compacted.original = compacted.original.defined() ? compacted.original + term : term;
    if (!last) rest = ir::FloorDiv(rest, places[p].radix);
  }
  compacted.body = inside;
  if (!others.empty()) {
    Expr other = others[0];
    for (size_t k = 1; k < others.size(); ++k) other = other && others[k];
    compacted.body = ir::MakeIfThenElse(other, inside);
  }
  return compacted;
}

}  // namespace tandem::kernels
