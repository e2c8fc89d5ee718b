#include "backends/reference/interpreter.h"

#include <fmt/format.h>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace tandem::backends {

using ir::Error;
using ir::NodeKind;
using ir::Tensor;

namespace {

// A runtime value: a tensor or a tuple of values.
struct Value {
  Tensor tensor;
  std::vector<Value> fields;
  bool is_tuple = false;
};

void Flatten(const Value& v, std::vector<Tensor>& out) {
  if (!v.is_tuple) {
    out.push_back(v.tensor);
    return;
  }
  for (const Value& f : v.fields) Flatten(f, out);
}

// Rebuilds a (possibly nested) tuple value from the flat list a reference function returns.
Value Unflatten(const ir::Type& type, const std::vector<Tensor>& flat, size_t& next) {
  Value v;
  if (type.is_tensor()) {
    v.tensor = flat.at(next++);
    return v;
  }
  v.is_tuple = true;
  for (const ir::Type& f : type.fields()) v.fields.push_back(Unflatten(f, flat, next));
  return v;
}

size_t CountTensors(const ir::Type& type) {
  if (type.is_tensor()) return 1;
  size_t n = 0;
  for (const ir::Type& f : type.fields()) n += CountTensors(f);
  return n;
}

}  // namespace

namespace {
std::vector<Tensor> Run(const ir::GraphFunction& fn, const std::vector<Tensor>& inputs,
                        const ir::IRModule* module) {
  if (inputs.size() != fn.params.size()) {
    throw Error(fmt::format("@{} takes {} inputs but {} were given", fn.name, fn.params.size(),
                            inputs.size()));
  }
  std::vector<Value> values(fn.nodes.size());
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Node& param = fn.node(fn.params[i]);
    const ir::TensorType& expected = param.type.tensor();
    if (inputs[i].shape() != expected.shape || inputs[i].dtype() != expected.dtype) {
      throw Error(fmt::format("input {} ('{}') must be {} but is {}", i, param.name,
                              ir::ToString(expected), ir::ToString(inputs[i].type())),
                  ir::ErrorLocation{.node = param.name});
    }
    values[static_cast<size_t>(fn.params[i])].tensor = inputs[i].WithLayout(expected.layout);
  }
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& node = fn.nodes[i];
    Value& out = values[i];
    switch (node.kind) {
      case NodeKind::kInput:
        break;
      case NodeKind::kConstant:
        out.tensor = node.value;
        break;
      case NodeKind::kCall: {
        std::vector<Tensor> operands;
        for (ir::ValueId id : node.inputs) {
          const Value& v = values[static_cast<size_t>(id)];
          if (v.is_tuple) {
            throw Error("a call operand is a tuple",
                        ir::ErrorLocation{.op = node.op, .node = node.name});
          }
          operands.push_back(v.tensor);
        }
        std::vector<Tensor> results;
        try {
          results = ir::EvaluateReference(node.op, operands, node.attrs, node.type);
        } catch (const Error& e) {
          throw e.WithNode(node.name);
        }
        if (results.size() != CountTensors(node.type)) {
          throw Error(fmt::format("reference of {} returned {} tensors for type {}", node.op,
                                  results.size(), ir::ToString(node.type)),
                      ir::ErrorLocation{.op = node.op, .node = node.name});
        }
        size_t next = 0;
        out = Unflatten(node.type, results, next);
        break;
      }
      case NodeKind::kCallKernel:
      case NodeKind::kCallExtern: {
        bool kernel = node.kind == NodeKind::kCallKernel;
        if (module == nullptr) {
          throw Error(fmt::format("{} of '{}' needs the module; run the module instead",
                                  ir::ToString(node.kind), node.callee),
                      ir::ErrorLocation{.node = node.name});
        }
        std::vector<Tensor> operands;
        for (ir::ValueId id : node.inputs)
          operands.push_back(values[static_cast<size_t>(id)].tensor);
        std::vector<Tensor> results;
        try {
          results = kernel ? RunKernelReference(module->GetKernel(node.callee), operands, true)
                           : Run(module->Get(node.callee), operands, module);
        } catch (const Error& e) {
          throw e.WithNode(node.name);
        }
        size_t next = 0;
        out = Unflatten(node.type, results, next);
        break;
      }
      case NodeKind::kTuple:
        out.is_tuple = true;
        for (ir::ValueId id : node.inputs) out.fields.push_back(values[static_cast<size_t>(id)]);
        break;
      case NodeKind::kTupleGetItem: {
        const Value& t = values[static_cast<size_t>(node.inputs.at(0))];
        out = t.fields.at(static_cast<size_t>(node.attrs.GetInt("index")));
        break;
      }
    }
  }
  std::vector<Tensor> result;
  Flatten(values[static_cast<size_t>(fn.output)], result);
  return result;
}

}  // namespace

std::vector<Tensor> RunReference(const ir::GraphFunction& fn, const std::vector<Tensor>& inputs) {
  return Run(fn, inputs, nullptr);
}

std::vector<Tensor> RunReference(const ir::IRModule& module, const std::vector<Tensor>& inputs,
                                 const std::string& function_name) {
  return Run(module.Get(function_name), inputs, &module);
}

std::vector<Tensor> RandomInputs(const ir::GraphFunction& fn, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    inputs.push_back(Tensor::Random(fn.node(fn.params[i]).type.tensor(), seed * 7919 + i));
  }
  return inputs;
}

}  // namespace tandem::backends
