// The op registry: one OpDef per graph operator.
//
// An OpDef is the single source of truth about an operator: its operand count, its typed
// attributes with defaults, its type inference, its fusion pattern kind and its reference
// semantics (plain loops, accumulating in double, used as the oracle for every compiled
// program). All ops are registered in one place, ir/ops/register_all_ops.cc.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/error.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::ir {

// How an op combines with its neighbours in operator fusion (ordered from most to least
// fusable, as in TVM's OpPatternKind).
enum class PatternKind {
  kElementwise,            // out[i] = f(in[i])
  kBroadcast,              // out[i] = f(in[broadcast(i)])
  kInjective,              // each output element reads one input element (reshape, transpose)
  kReduction,              // reduces axes (sum, mean, max)
  kOutElementwiseFusable,  // complex op whose output can take an elementwise epilogue (conv)
  kOpaque,                 // not fusable
};

std::string ToString(PatternKind kind);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: the attribute is required
  std::string doc;
};

// Returns the result type; throws Error (message only; the caller adds op and operand context).
using InferTypeFunction = std::function<Type(const std::vector<Type>& inputs, const Attrs& attrs)>;
// Computes the op on concrete tensors. `output` is the inferred result type; the result has one
// tensor per tensor in the output type (one for a tensor result, one per field for a tuple).
using ReferenceFunction = std::function<std::vector<Tensor>(
    const std::vector<Tensor>& inputs, const Attrs& attrs, const Type& output)>;

struct OpDef {
  std::string name;
  std::string doc;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  std::vector<AttrSpec> attrs;
  PatternKind pattern = PatternKind::kOpaque;
  InferTypeFunction infer_type;
  ReferenceFunction reference;
};

class OpRegistry {
 public:
  // The registry holding every built-in op (built on first use, thread-safe).
  static const OpRegistry& Global();

  // Adds an op; throws Error if the name is taken or the definition is incomplete.
  void Register(OpDef def);
  const OpDef* Find(const std::string& name) const;
  // Throws Error "unknown op 'x'" (with the closest known names) when missing.
  const OpDef& Get(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, OpDef> ops_;
};

// Checks operand count and attributes of a call of `op` against its OpDef and returns the
// attributes normalized: defaults filled in, ints promoted to floats where a float is declared.
// Unknown attributes, missing required ones and wrong kinds are errors naming the op.
Attrs NormalizeAttrs(const OpDef& op, size_t num_inputs, const Attrs& attrs);

// Normalizes the attributes and infers the result type of a call. Errors name the op and list
// the operand types, e.g. "conv2d: channels of data (3) must equal ... (operands: f32[1,3,8,8],
// f32[4,2,3,3])".
Type InferCallType(const std::string& op, const std::vector<Type>& inputs, Attrs& attrs);

// Runs the reference semantics of a call on concrete tensors (attrs must be normalized).
std::vector<Tensor> EvaluateReference(const std::string& op, const std::vector<Tensor>& inputs,
                                      const Attrs& attrs, const Type& output);

// Registration entry points, one per ops file; called once by OpRegistry::Global().
void RegisterAllOps(OpRegistry& registry);

}  // namespace tandem::ir
