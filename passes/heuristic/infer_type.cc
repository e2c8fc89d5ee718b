// InferType: recomputes the type of every node from its operands (op type inference, tuple
// fields, kernel signatures), so passes that edit nodes may leave types stale and run InferType
// after them. A type error is reported at the node that causes it.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

ir::Type KernelResult(const ir::KernelFunction& kernel) {
  std::vector<ir::Type> outputs;
  for (size_t i = kernel.params.size() - static_cast<size_t>(kernel.num_outputs);
       i < kernel.params.size(); ++i) {
    outputs.push_back(ir::TensorType{kernel.params[i]->shape, kernel.params[i]->dtype, ""});
  }
  return outputs.size() == 1 ? outputs[0] : ir::Type::Tuple(outputs);
}

ir::GraphFunction InferTypes(const ir::GraphFunction& fn, const ir::IRModule& module) {
  ir::GraphFunction out = fn;
  for (ir::Node& node : out.nodes) {
    try {
      switch (node.kind) {
        case ir::NodeKind::kInput:
          break;
        case ir::NodeKind::kConstant:
          node.type = ir::TensorType{node.value.shape(), node.value.dtype(),
                                     node.type.is_tensor() ? node.type.tensor().layout : ""};
          break;
        case ir::NodeKind::kCall: {
          std::vector<ir::Type> operands;
          for (ir::ValueId id : node.inputs) operands.push_back(out.type_of(id));
          node.type = ir::InferCallType(node.op, operands, node.attrs);
          break;
        }
        case ir::NodeKind::kTuple: {
          std::vector<ir::Type> fields;
          for (ir::ValueId id : node.inputs) fields.push_back(out.type_of(id));
          node.type = ir::Type::Tuple(fields);
          break;
        }
        case ir::NodeKind::kTupleGetItem: {
          const ir::Type& tuple = out.type_of(node.inputs.at(0));
          int64_t index = node.attrs.GetInt("index");
          if (!tuple.is_tuple() || index < 0 ||
              index >= static_cast<int64_t>(tuple.fields().size())) {
            throw ir::Error(fmt::format("tuple_get_item {} of {}", index, ir::ToString(tuple)));
          }
          node.type = tuple.fields()[static_cast<size_t>(index)];
          break;
        }
        case ir::NodeKind::kCallExtern: {
          const ir::GraphFunction& callee = module.Get(node.callee);
          node.type = callee.type_of(callee.output);
          break;
        }
        case ir::NodeKind::kCallKernel: {
          ir::Type result = KernelResult(module.GetKernel(node.callee));
          // Keep layout tags the node carries when the kernel's buffers agree with them.
          if (!(node.type.is_tensor() && result.is_tensor() &&
                node.type.tensor().shape == result.tensor().shape &&
                node.type.tensor().dtype == result.tensor().dtype)) {
            node.type = result;
          }
          break;
        }
      }
    } catch (const ir::Error& e) {
      throw e.WithNode(node.name);
    }
  }
  return out;
}

}  // namespace

void RegisterInferType(PassRegistry& registry) {
  RegisterFunctionPass<NoOptions>(
      registry,
      {.name = "InferType",
       .summary = "Recompute every node's type from its operands; report type errors at the node."},
      [](const ir::IRModule& module, PassContext&, const NoOptions&) {
        return MapGraphFunctions(
            module, [&](const ir::GraphFunction& fn) { return InferTypes(fn, module); });
      });
}

}  // namespace tandem::passes
