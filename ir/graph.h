// The graph IR: SSA dataflow functions of op calls over typed tensors.
//
// A GraphFunction is a list of nodes in topological order; every node defines one SSA value
// and refers to earlier nodes by index (ValueId). Node kinds:
//   input         a function parameter (listed in `params`, in call order)
//   constant      a weight; holds its Tensor
//   call          an op call: `op` names an entry of the op registry, `attrs` are its typed
//                 attributes (normalized: every declared attribute present)
//   tuple         groups values
//   tuple_get_item  field `index` of a tuple value
//   call_kernel   a call of the module's kernel function `callee` (after Legalize): operands are
//                 its input buffers, the result its output buffer(s) (a tuple for several)
//   call_extern   a call of the module's graph function `callee`, a subgraph placed on an
//                 external backend (oneDNN, cuBLAS): the callee's function attribute
//                 `extern_backend` names the backend, its parameters take the operands, and its
//                 body is the subgraph's meaning (what the reference interpreter runs)
// Every node carries its Type and free-form `annotations` (backend, layout, fusion group,
// device ...) that passes use to record decisions and that the text form prints.
//
// Functions and modules are values. An IRModule holds its functions through shared pointers to
// const, so copying a module is cheap and candidates in tuning share unchanged functions
// (copy-on-write: replacing a function never mutates the shared one).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/kernel/stmt.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tandem::ir {

using ValueId = int32_t;

enum class NodeKind { kInput, kConstant, kCall, kTuple, kTupleGetItem, kCallKernel, kCallExtern };

std::string ToString(NodeKind kind);

struct Node {
  NodeKind kind = NodeKind::kCall;
  std::string name;             // SSA name, unique within the function (printed as %name)
  std::string op;               // kCall: registry op name; kCallKernel/kCallExtern: what it does
  std::string callee;           // kCallKernel: kernel function; kCallExtern: graph function
  std::vector<ValueId> inputs;  // operands (earlier nodes)
  Attrs attrs;                  // kCall: op attributes; kTupleGetItem: {"index"}
  Type type;                    // result type
  Tensor value;                 // kConstant: the data
  Attrs annotations;            // decisions recorded by passes (backend, group, ...)
};

// The function attribute that marks a graph function as a subgraph placed on an external
// backend (value: the backend's name). Passes that rewrite graph functions leave such functions
// alone; they are compiled by their backend, not legalized.
inline constexpr const char* kExternBackendAttr = "extern_backend";

struct GraphFunction {
  std::string name;
  std::vector<Node> nodes;      // topological order
  std::vector<ValueId> params;  // the kInput nodes, in call order
  ValueId output = -1;          // the returned value (a tuple node for several results)
  Attrs attrs;                  // function attributes

  const Node& node(ValueId id) const { return nodes.at(static_cast<size_t>(id)); }
  const Type& type_of(ValueId id) const { return node(id).type; }
  // Output types flattened: one entry per returned tensor.
  std::vector<TensorType> OutputTensorTypes() const;
  // Index of the node named `name`, or -1.
  ValueId Find(const std::string& name) const;
  // The backend this function is placed on ("" for an ordinary function).
  std::string ExternBackend() const;
};

// Checks SSA well-formedness (operands refer to earlier nodes, names unique, params are input
// nodes), that every call names a registered op with valid attributes, and that every recorded
// type equals the type inferred from the operands. Throws Error naming the function and node.
void Verify(const GraphFunction& function);

// Number of uses of every node (operands of other nodes, plus one for the returned value).
std::vector<int> UseCounts(const GraphFunction& function);

class IRModule {
 public:
  IRModule() = default;

  // Adds or replaces a function (by its name).
  void Add(GraphFunction function);
  void Add(std::shared_ptr<const GraphFunction> function);
  bool Has(const std::string& name) const { return graph_functions_.count(name) != 0; }
  // Throws Error when there is no such function.
  const GraphFunction& Get(const std::string& name) const;
  std::shared_ptr<const GraphFunction> GetShared(const std::string& name) const;
  void Remove(const std::string& name) { graph_functions_.erase(name); }
  const std::map<std::string, std::shared_ptr<const GraphFunction>>& graph_functions() const {
    return graph_functions_;
  }

  // Kernel functions (created by Legalize), by name.
  void AddKernel(KernelFunction kernel);
  bool HasKernel(const std::string& name) const { return kernel_functions_.count(name) != 0; }
  // Throws Error when there is no such kernel.
  const KernelFunction& GetKernel(const std::string& name) const;
  void RemoveKernel(const std::string& name) { kernel_functions_.erase(name); }
  const std::map<std::string, std::shared_ptr<const KernelFunction>>& kernel_functions() const {
    return kernel_functions_;
  }

  Attrs& attrs() { return attrs_; }
  const Attrs& attrs() const { return attrs_; }

 private:
  std::map<std::string, std::shared_ptr<const GraphFunction>> graph_functions_;
  std::map<std::string, std::shared_ptr<const KernelFunction>> kernel_functions_;
  Attrs attrs_;
};

// Verifies every function of the module, that every call_kernel names a kernel of the module
// whose parameter buffers match the operand and result types, and that every call_extern names
// an extern function of the module whose parameters and result match its operands and type.
void Verify(const IRModule& module);

// Builds a GraphFunction through the public API a user (or the ONNX importer) would use. Every
// Call is type-checked against the op registry at once, so a shape mismatch is reported at the
// line that caused it, naming the op, the node and the operand types.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string function_name);

  ValueId Input(const std::string& name, TensorType type);
  ValueId Constant(Tensor value, const std::string& name = "");
  ValueId Call(const std::string& op, const std::vector<ValueId>& inputs, Attrs attrs = {},
               const std::string& name = "");
  ValueId Tuple(const std::vector<ValueId>& fields, const std::string& name = "");
  ValueId TupleGetItem(ValueId tuple, int64_t index, const std::string& name = "");
  // A call of kernel `kernel` (which the caller adds to the module under kernel.name). The
  // result type is `result_type` when given (it must match the kernel's output buffers up to
  // layout tags, which it may carry), else derived from the kernel. `op` and `attrs` record the
  // op the kernel implements.
  ValueId CallKernel(const KernelFunction& kernel, const std::vector<ValueId>& inputs,
                     const std::string& op = "", Attrs attrs = {}, const std::string& name = "",
                     std::optional<Type> result_type = std::nullopt);
  // Sets an annotation on an already-built node.
  void Annotate(ValueId id, const std::string& key, AttrValue value);

  // The type of a built value, by value: a reference into the node list would dangle once a
  // later Call grows it. TensorTypeOf throws Error when the value is a tuple.
  Type TypeOf(ValueId id) const;
  TensorType TensorTypeOf(ValueId id) const;
  int64_t num_nodes() const { return static_cast<int64_t>(function_.nodes.size()); }

  // Finishes the function returning `output`; the builder is left empty.
  GraphFunction Finish(ValueId output);
  // Finishes a function returning several values (wrapped in a tuple node).
  GraphFunction Finish(const std::vector<ValueId>& outputs);

 private:
  ValueId Push(Node node);
  std::string FreshName(const std::string& requested);
  void CheckOperand(ValueId id) const;

  GraphFunction function_;
  std::map<std::string, int> used_names_;
  int next_temp_ = 0;
};

}  // namespace tandem::ir
