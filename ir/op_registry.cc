#include "ir/op_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "ir/suggest.h"

namespace tandem::ir {

std::string ToString(PatternKind kind) {
  switch (kind) {
    case PatternKind::kElementwise:
      return "elementwise";
    case PatternKind::kBroadcast:
      return "broadcast";
    case PatternKind::kInjective:
      return "injective";
    case PatternKind::kReduction:
      return "reduction";
    case PatternKind::kOutElementwiseFusable:
      return "out_elementwise_fusable";
    case PatternKind::kOpaque:
      return "opaque";
  }
  return "?";
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  if (def.name.empty()) throw Error("cannot register an op without a name");
  if (ops_.count(def.name)) throw Error(fmt::format("op '{}' is registered twice", def.name));
  if (!def.infer_type || !def.reference) {
    throw Error(fmt::format("op '{}' needs both type inference and reference semantics", def.name));
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpDef& OpRegistry::Get(const std::string& name) const {
  if (const OpDef* def = Find(name)) return *def;
  std::vector<std::string> close = CloseNames(name, Names(), 2);
  std::string hint = close.empty() ? "" : fmt::format("; did you mean {}?", fmt::join(close, ", "));
  throw Error(fmt::format("unknown op '{}'{}", name, hint), ErrorLocation{.op = name});
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

Attrs NormalizeAttrs(const OpDef& op, size_t num_inputs, const Attrs& attrs) {
  ErrorLocation where{.op = op.name};
  int n = static_cast<int>(num_inputs);
  if (n < op.min_inputs || (op.max_inputs >= 0 && n > op.max_inputs)) {
    std::string expected = op.max_inputs < 0 ? fmt::format("at least {}", op.min_inputs)
                           : op.min_inputs == op.max_inputs
                               ? fmt::format("{}", op.min_inputs)
                               : fmt::format("{} to {}", op.min_inputs, op.max_inputs);
    throw Error(fmt::format("{} takes {} operands but {} were given", op.name, expected, n), where);
  }
  Attrs out;
  for (const AttrSpec& spec : op.attrs) {
    if (!attrs.Has(spec.name)) {
      if (!spec.default_value) {
        throw Error(
            fmt::format("{} requires attribute '{}' ({})", op.name, spec.name, ToString(spec.kind)),
            where);
      }
      out.Set(spec.name, *spec.default_value);
      continue;
    }
    const AttrValue& value = attrs.values().at(spec.name);
    AttrKind kind = KindOf(value);
    if (kind == spec.kind) {
      out.Set(spec.name, value);
    } else if (spec.kind == AttrKind::kFloat && kind == AttrKind::kInt) {
      out.Set(spec.name, static_cast<double>(std::get<int64_t>(value)));
    } else if (spec.kind == AttrKind::kFloats && kind == AttrKind::kInts) {
      const auto& ints = std::get<std::vector<int64_t>>(value);
      out.Set(spec.name, std::vector<double>(ints.begin(), ints.end()));
    } else if (spec.kind == AttrKind::kInts && kind == AttrKind::kFloats &&
               std::get<std::vector<double>>(value).empty()) {
      out.Set(spec.name, std::vector<int64_t>{});
    } else {
      throw Error(fmt::format("{}: attribute '{}' must be {} but is {} {}", op.name, spec.name,
                              ToString(spec.kind), ToString(kind), ToString(value)),
                  where);
    }
  }
  for (const auto& entry : attrs.values()) {
    const std::string& name = entry.first;
    bool known = std::any_of(op.attrs.begin(), op.attrs.end(),
                             [&](const AttrSpec& s) { return s.name == name; });
    if (!known) {
      std::vector<std::string> names;
      for (const AttrSpec& s : op.attrs) names.push_back(s.name);
      throw Error(fmt::format("{} has no attribute '{}' (its attributes: {})", op.name, name,
                              names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))),
                  where);
    }
  }
  return out;
}

Type InferCallType(const std::string& op, const std::vector<Type>& inputs, Attrs& attrs) {
  const OpDef& def = OpRegistry::Global().Get(op);
  attrs = NormalizeAttrs(def, inputs.size(), attrs);
  try {
    Type result = def.infer_type(inputs, attrs);
    CheckSizes(result);
    return result;
  } catch (const Error& e) {
    std::vector<std::string> operands;
    for (const Type& t : inputs) operands.push_back(ToString(t));
    std::string message = e.message();
    if (message.rfind(op, 0) != 0) message = op + ": " + message;
    ErrorLocation where = e.where();
    if (where.op.empty()) where.op = op;
    throw Error(fmt::format("{} (operands: {})", message, fmt::join(operands, ", ")), where);
  }
}

std::vector<Tensor> EvaluateReference(const std::string& op, const std::vector<Tensor>& inputs,
                                      const Attrs& attrs, const Type& output) {
  const OpDef& def = OpRegistry::Global().Get(op);
  try {
    return def.reference(inputs, attrs, output);
  } catch (const Error& e) {
    throw e.WithOp(op);
  }
}

}  // namespace tandem::ir
