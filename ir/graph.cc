#include "ir/graph.h"

#include <fmt/format.h>

#include <set>

#include "ir/error.h"
#include "ir/op_registry.h"

namespace tandem::ir {

std::string ToString(NodeKind kind) {
  switch (kind) {
    case NodeKind::kInput:
      return "input";
    case NodeKind::kConstant:
      return "constant";
    case NodeKind::kCall:
      return "call";
    case NodeKind::kTuple:
      return "tuple";
    case NodeKind::kTupleGetItem:
      return "tuple_get_item";
    case NodeKind::kCallKernel:
      return "call_kernel";
    case NodeKind::kCallExtern:
      return "call_extern";
  }
  return "?";
}

std::vector<TensorType> GraphFunction::OutputTensorTypes() const {
  std::vector<TensorType> out;
  std::function<void(const Type&)> flatten = [&](const Type& t) {
    if (t.is_tensor()) {
      out.push_back(t.tensor());
    } else {
      for (const Type& f : t.fields()) flatten(f);
    }
  };
  flatten(type_of(output));
  return out;
}

std::string GraphFunction::ExternBackend() const {
  return attrs.Has(kExternBackendAttr) ? attrs.GetString(kExternBackendAttr) : "";
}

std::vector<int> UseCounts(const GraphFunction& function) {
  std::vector<int> uses(function.nodes.size(), 0);
  for (const Node& node : function.nodes) {
    for (ValueId input : node.inputs) ++uses[static_cast<size_t>(input)];
  }
  if (function.output >= 0) ++uses[static_cast<size_t>(function.output)];
  return uses;
}

ValueId GraphFunction::Find(const std::string& value_name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == value_name) return static_cast<ValueId>(i);
  }
  return -1;
}

namespace {

Type InferTupleGetItem(const Type& tuple, int64_t index) {
  if (!tuple.is_tuple()) {
    throw Error("tuple_get_item needs a tuple operand but got " + ToString(tuple));
  }
  if (index < 0 || index >= static_cast<int64_t>(tuple.fields().size())) {
    throw Error(
        fmt::format("tuple_get_item index {} is out of range for {}", index, ToString(tuple)));
  }
  return tuple.fields()[static_cast<size_t>(index)];
}

}  // namespace

void Verify(const GraphFunction& fn) {
  std::set<std::string> names;
  ErrorLocation where;
  auto fail = [&](const std::string& message, const Node& node) {
    throw Error(fmt::format("graph function @{}: {}", fn.name, message),
                ErrorLocation{.op = node.op, .node = node.name});
  };
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const Node& node = fn.nodes[i];
    if (node.name.empty()) fail(fmt::format("node {} has no name", i), node);
    if (!names.insert(node.name).second) fail("the value name is defined twice", node);
    for (ValueId input : node.inputs) {
      if (input < 0 || static_cast<size_t>(input) >= i) {
        fail(fmt::format("operand {} does not refer to an earlier value", input), node);
      }
    }
    try {
      switch (node.kind) {
        case NodeKind::kInput:
          if (!node.inputs.empty()) fail("an input has no operands", node);
          if (!node.type.is_tensor()) fail("an input must have a tensor type", node);
          break;
        case NodeKind::kConstant:
          if (!node.inputs.empty()) fail("a constant has no operands", node);
          if (!node.type.is_tensor() || node.value.shape() != node.type.tensor().shape ||
              node.value.dtype() != node.type.tensor().dtype) {
            fail(fmt::format("constant data {} does not match its type {}",
                             ToString(node.value.type()), ToString(node.type)),
                 node);
          }
          break;
        case NodeKind::kCall: {
          std::vector<Type> operand_types;
          for (ValueId input : node.inputs) operand_types.push_back(fn.type_of(input));
          Attrs attrs = node.attrs;
          Type inferred = InferCallType(node.op, operand_types, attrs);
          if (!(attrs == node.attrs)) {
            fail(fmt::format("attributes {} are not normalized (expected {})", ToString(node.attrs),
                             ToString(attrs)),
                 node);
          }
          if (!(inferred == node.type)) {
            fail(fmt::format("recorded type {} differs from the inferred type {}",
                             ToString(node.type), ToString(inferred)),
                 node);
          }
          break;
        }
        case NodeKind::kTuple: {
          std::vector<Type> fields;
          for (ValueId input : node.inputs) fields.push_back(fn.type_of(input));
          if (!(Type::Tuple(fields) == node.type))
            fail("tuple type does not match its fields", node);
          break;
        }
        case NodeKind::kCallKernel:
          if (node.callee.empty()) fail("call_kernel without a callee", node);
          break;
        case NodeKind::kCallExtern:
          if (node.callee.empty()) fail("call_extern without a callee", node);
          break;
        case NodeKind::kTupleGetItem: {
          if (node.inputs.size() != 1) fail("tuple_get_item takes one operand", node);
          Type t = InferTupleGetItem(fn.type_of(node.inputs[0]), node.attrs.GetInt("index"));
          if (!(t == node.type)) fail("tuple_get_item type does not match the field", node);
          break;
        }
      }
    } catch (const Error& e) {
      if (e.message().rfind("graph function @", 0) == 0) throw;
      throw Error(fmt::format("graph function @{}: {}", fn.name, e.message()),
                  ErrorLocation{.op = node.op, .node = node.name});
    }
  }
  for (ValueId p : fn.params) {
    if (p < 0 || static_cast<size_t>(p) >= fn.nodes.size() ||
        fn.nodes[static_cast<size_t>(p)].kind != NodeKind::kInput) {
      throw Error(fmt::format("graph function @{}: parameter {} is not an input node", fn.name, p));
    }
  }
  size_t num_inputs = 0;
  for (const Node& n : fn.nodes) num_inputs += n.kind == NodeKind::kInput ? 1 : 0;
  if (num_inputs != fn.params.size()) {
    throw Error(fmt::format("graph function @{}: {} input nodes but {} parameters", fn.name,
                            num_inputs, fn.params.size()));
  }
  if (fn.output < 0 || static_cast<size_t>(fn.output) >= fn.nodes.size()) {
    throw Error(fmt::format("graph function @{}: it returns no value", fn.name));
  }
}

void IRModule::Add(GraphFunction function) {
  Add(std::make_shared<const GraphFunction>(std::move(function)));
}

void IRModule::Add(std::shared_ptr<const GraphFunction> function) {
  std::string name = function->name;
  graph_functions_[name] = std::move(function);
}

const GraphFunction& IRModule::Get(const std::string& name) const {
  return *GetShared(name);
}

std::shared_ptr<const GraphFunction> IRModule::GetShared(const std::string& name) const {
  auto it = graph_functions_.find(name);
  if (it == graph_functions_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, f] : graph_functions_) names.push_back("@" + n);
    throw Error(fmt::format("the module has no graph function @{} (it has: {})", name,
                            names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  return it->second;
}

namespace {

Type KernelResultType(const KernelFunction& kernel) {
  std::vector<Type> outputs;
  size_t first = kernel.params.size() - static_cast<size_t>(kernel.num_outputs);
  for (size_t i = first; i < kernel.params.size(); ++i) {
    outputs.push_back(TensorType{kernel.params[i]->shape, kernel.params[i]->dtype, ""});
  }
  if (outputs.size() == 1) return outputs[0];
  return Type::Tuple(outputs);
}

bool SameTensor(const TensorType& a, const TensorType& b) {
  return a.shape == b.shape && a.dtype == b.dtype;  // kernels see raw buffers: layouts are tags
}

bool SameIgnoringLayout(const Type& a, const Type& b) {
  if (a.is_tensor() != b.is_tensor()) return false;
  if (a.is_tensor()) return SameTensor(a.tensor(), b.tensor());
  if (a.fields().size() != b.fields().size()) return false;
  for (size_t i = 0; i < a.fields().size(); ++i) {
    if (!SameIgnoringLayout(a.fields()[i], b.fields()[i])) return false;
  }
  return true;
}

void CheckKernelCall(const GraphFunction& fn, const Node& node, const KernelFunction& kernel) {
  ErrorLocation where{.op = node.op, .node = node.name};
  size_t num_inputs = kernel.params.size() - static_cast<size_t>(kernel.num_outputs);
  if (node.inputs.size() != num_inputs) {
    throw Error(fmt::format("graph function @{}: call of kernel '{}' with {} operands; it takes {}",
                            fn.name, kernel.name, node.inputs.size(), num_inputs),
                where);
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    const Type& t = fn.type_of(node.inputs[i]);
    TensorType param{kernel.params[i]->shape, kernel.params[i]->dtype, ""};
    if (!t.is_tensor() || !SameTensor(t.tensor(), param)) {
      throw Error(fmt::format("graph function @{}: operand {} of kernel '{}' is {} but the kernel "
                              "takes {}",
                              fn.name, i, kernel.name, ToString(t), ToString(param)),
                  where);
    }
  }
  if (!SameIgnoringLayout(node.type, KernelResultType(kernel))) {
    throw Error(
        fmt::format("graph function @{}: call of kernel '{}' has type {} but the kernel "
                    "produces {}",
                    fn.name, kernel.name, ToString(node.type), ToString(KernelResultType(kernel))),
        where);
  }
}

void CheckExternCall(const GraphFunction& fn, const Node& node, const IRModule& module) {
  ErrorLocation where{.op = node.op, .node = node.name};
  if (!module.Has(node.callee)) {
    throw Error(fmt::format("graph function @{}: call_extern of '{}', which is not a graph "
                            "function of the module",
                            fn.name, node.callee),
                where);
  }
  const GraphFunction& callee = module.Get(node.callee);
  if (callee.ExternBackend().empty()) {
    throw Error(fmt::format("graph function @{}: call_extern of @{}, which has no '{}' attribute",
                            fn.name, node.callee, kExternBackendAttr),
                where);
  }
  if (node.inputs.size() != callee.params.size()) {
    throw Error(fmt::format("graph function @{}: call_extern of @{} with {} operands; it takes {}",
                            fn.name, node.callee, node.inputs.size(), callee.params.size()),
                where);
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Type& operand = fn.type_of(node.inputs[i]);
    const Type& param = callee.type_of(callee.params[i]);
    if (!(operand == param)) {
      throw Error(fmt::format("graph function @{}: operand {} of @{} is {} but it takes {}",
                              fn.name, i, node.callee, ToString(operand), ToString(param)),
                  where);
    }
  }
  if (!(node.type == callee.type_of(callee.output))) {
    throw Error(
        fmt::format("graph function @{}: call_extern of @{} has type {} but it returns {}", fn.name,
                    node.callee, ToString(node.type), ToString(callee.type_of(callee.output))),
        where);
  }
}

}  // namespace

void Verify(const IRModule& module) {
  for (const auto& [name, fn] : module.graph_functions()) {
    Verify(*fn);
    for (const Node& node : fn->nodes) {
      if (node.kind == NodeKind::kCallKernel)
        CheckKernelCall(*fn, node, module.GetKernel(node.callee));
      if (node.kind == NodeKind::kCallExtern) CheckExternCall(*fn, node, module);
    }
  }
}

void IRModule::AddKernel(KernelFunction kernel) {
  std::string name = kernel.name;
  kernel_functions_[name] = std::make_shared<const KernelFunction>(std::move(kernel));
}

const KernelFunction& IRModule::GetKernel(const std::string& name) const {
  auto it = kernel_functions_.find(name);
  if (it == kernel_functions_.end()) {
    throw Error(fmt::format("the module has no kernel function '{}'", name));
  }
  return *it->second;
}

GraphBuilder::GraphBuilder(std::string function_name) {
  function_.name = std::move(function_name);
}

std::string GraphBuilder::FreshName(const std::string& requested) {
  if (!requested.empty() && used_names_.count(requested) == 0) {
    used_names_[requested] = 1;
    return requested;
  }
  std::string base = requested.empty() ? "" : requested + "_";
  while (true) {
    std::string candidate = base + std::to_string(next_temp_++);
    if (used_names_.count(candidate) == 0) {
      used_names_[candidate] = 1;
      return candidate;
    }
  }
}

void GraphBuilder::CheckOperand(ValueId id) const {
  if (id < 0 || id >= static_cast<ValueId>(function_.nodes.size())) {
    throw Error(fmt::format("value {} does not exist in function @{}", id, function_.name));
  }
}

ValueId GraphBuilder::Push(Node node) {
  function_.nodes.push_back(std::move(node));
  return static_cast<ValueId>(function_.nodes.size() - 1);
}

ValueId GraphBuilder::Input(const std::string& name, TensorType type) {
  for (int64_t d : type.shape) {
    if (d < 0)
      throw Error(fmt::format("input '{}' has a negative extent in {}", name, ToString(type)));
  }
  Node node;
  node.kind = NodeKind::kInput;
  node.name = FreshName(name);
  node.type = std::move(type);
  ValueId id = Push(std::move(node));
  function_.params.push_back(id);
  return id;
}

ValueId GraphBuilder::Constant(Tensor value, const std::string& name) {
  Node node;
  node.kind = NodeKind::kConstant;
  node.name = FreshName(name.empty() ? "c" : name);
  node.type = TensorType{value.shape(), value.dtype(), ""};
  node.value = value.WithLayout("");
  return Push(std::move(node));
}

ValueId GraphBuilder::Call(const std::string& op, const std::vector<ValueId>& inputs, Attrs attrs,
                           const std::string& name) {
  std::vector<Type> operand_types;
  for (ValueId input : inputs) {
    CheckOperand(input);
    operand_types.push_back(TypeOf(input));
  }
  Node node;
  node.kind = NodeKind::kCall;
  node.op = op;
  node.inputs = inputs;
  try {
    node.type = InferCallType(op, operand_types, attrs);
  } catch (const Error& e) {
    throw e.WithNode(name.empty() ? fmt::format("#{}", function_.nodes.size()) : name);
  }
  node.attrs = std::move(attrs);
  node.name = FreshName(name);
  return Push(std::move(node));
}

ValueId GraphBuilder::Tuple(const std::vector<ValueId>& fields, const std::string& name) {
  std::vector<Type> types;
  for (ValueId f : fields) {
    CheckOperand(f);
    types.push_back(TypeOf(f));
  }
  Node node;
  node.kind = NodeKind::kTuple;
  node.inputs = fields;
  node.type = Type::Tuple(std::move(types));
  node.name = FreshName(name);
  return Push(std::move(node));
}

ValueId GraphBuilder::TupleGetItem(ValueId tuple, int64_t index, const std::string& name) {
  CheckOperand(tuple);
  Node node;
  node.kind = NodeKind::kTupleGetItem;
  node.inputs = {tuple};
  node.attrs.Set("index", index);
  node.type = InferTupleGetItem(TypeOf(tuple), index);
  node.name = FreshName(name);
  return Push(std::move(node));
}

ValueId GraphBuilder::CallKernel(const KernelFunction& kernel, const std::vector<ValueId>& inputs,
                                 const std::string& op, Attrs attrs, const std::string& name,
                                 std::optional<Type> result_type) {
  for (ValueId input : inputs) CheckOperand(input);
  Node node;
  node.kind = NodeKind::kCallKernel;
  node.callee = kernel.name;
  node.op = op;
  node.attrs = std::move(attrs);
  node.inputs = inputs;
  node.type = result_type ? *result_type : KernelResultType(kernel);
  node.name = FreshName(name);
  CheckKernelCall(function_, node, kernel);
  return Push(std::move(node));
}

void GraphBuilder::Annotate(ValueId id, const std::string& key, AttrValue value) {
  CheckOperand(id);
  function_.nodes[static_cast<size_t>(id)].annotations.Set(key, std::move(value));
}

Type GraphBuilder::TypeOf(ValueId id) const {
  CheckOperand(id);
  return function_.nodes[static_cast<size_t>(id)].type;
}

TensorType GraphBuilder::TensorTypeOf(ValueId id) const {
  CheckOperand(id);
  return function_.nodes[static_cast<size_t>(id)].type.tensor();
}

GraphFunction GraphBuilder::Finish(ValueId output) {
  CheckOperand(output);
  function_.output = output;
  GraphFunction done = std::move(function_);
  function_ = GraphFunction{};
  function_.name = done.name;
  used_names_.clear();
  next_temp_ = 0;
  return done;
}

GraphFunction GraphBuilder::Finish(const std::vector<ValueId>& outputs) {
  if (outputs.size() == 1) return Finish(outputs[0]);
  return Finish(Tuple(outputs, "outputs"));
}

}  // namespace tandem::ir
