#include "kernels/compute/lower.h"

#include <fmt/format.h>

#include <map>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "kernels/compute/op_compute.h"

namespace tandem::kernels {
namespace {

using ir::Buffer;
using ir::Error;
using ir::ValueId;

void FlattenType(const ir::Type& type, std::vector<ir::TensorType>& out) {
  if (type.is_tensor()) {
    out.push_back(type.tensor());
    return;
  }
  for (const ir::Type& field : type.fields()) FlattenType(field, out);
}

const ComputeDef& GetCompute(const std::string& op) {
  const ComputeDef* def = FindCompute(op);
  if (def == nullptr) {
    if (ir::OpRegistry::Global().Find(op) == nullptr) {
      throw Error(fmt::format("unknown op '{}'", op), ir::ErrorLocation{.op = op});
    }
    throw LoweringError(op, "the op has no compute definition");
  }
  return *def;
}

// Normalizes the attributes, re-infers the result type and checks it against `output`.
OpCall PrepareCall(const std::string& op, const ir::Attrs& attrs,
                   const std::vector<ir::TensorType>& inputs, const ir::Type& output) {
  OpCall call;
  call.op = op;
  call.attrs = attrs;
  call.input_types = inputs;
  std::vector<ir::Type> types(inputs.begin(), inputs.end());
  ir::Type inferred;
  try {
    inferred = ir::InferCallType(op, types, call.attrs);
  } catch (const Error& e) {
    throw e.WithOp(op);
  }
  std::vector<ir::TensorType> expected;
  FlattenType(inferred, expected);
  FlattenType(output, call.output_types);
  bool same = expected.size() == call.output_types.size();
  for (size_t i = 0; same && i < expected.size(); ++i) {
    same = expected[i].shape == call.output_types[i].shape &&
           expected[i].dtype == call.output_types[i].dtype;
  }
  if (!same) {
    throw LoweringError(op, fmt::format("the given result type {} differs from the inferred {}",
                                        ir::ToString(output), ir::ToString(inferred)));
  }
  return call;
}

void Lower(ComputeBuilder& builder, const ComputeDef& def, const OpCall& call) {
  try {
    def.lower(builder, call);
  } catch (const Error& e) {
    throw e.WithOp(call.op);
  }
}

// A value of the graph function during lowering: where each of its tensors comes from (a
// parameter node or field `field` of a call node), structured like its type.
struct Source {
  ValueId node = -1;
  int64_t field = -1;  // -1: the node's value is a tensor
  bool operator<(const Source& other) const {
    return node != other.node ? node < other.node : field < other.field;
  }
};

struct Value {
  bool is_tuple = false;
  Source leaf;
  std::vector<Value> fields;
};

void FlattenValue(const Value& value, std::vector<Source>& out) {
  if (!value.is_tuple) {
    out.push_back(value.leaf);
    return;
  }
  for (const Value& field : value.fields) FlattenValue(field, out);
}

std::string SourceName(const ir::GraphFunction& function, const Source& source) {
  const std::string& name = function.node(source.node).name;
  return source.field < 0 ? name : fmt::format("{}_{}", name, source.field);
}

}  // namespace

bool HasCompute(const std::string& op) {
  return FindCompute(op) != nullptr;
}

ir::KernelFunction LowerOpCall(const std::string& name, const std::string& op,
                               const ir::Attrs& attrs, const std::vector<ir::TensorType>& inputs,
                               const ir::Type& output) {
  const ComputeDef& def = GetCompute(op);
  OpCall call = PrepareCall(op, attrs, inputs, output);
  ComputeBuilder builder(name);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<std::string>& names = def.operand_names;
    std::string operand = i < names.size() ? names[i] : fmt::format("input{}", i);
    if (i + 1 >= names.size() && inputs.size() > names.size()) {
      operand = fmt::format("{}{}", names.back(), i);  // variadic operands: x0, x1, ...
    }
    call.inputs.push_back(builder.AddInput(operand, inputs[i]));
  }
  bool single = output.is_tensor();
  for (size_t i = 0; i < call.output_types.size(); ++i) {
    call.outputs.push_back(
        builder.AddOutput(single ? "output" : fmt::format("output{}", i), call.output_types[i]));
  }
  Lower(builder, def, call);
  return builder.Finish();
}

ir::KernelFunction LowerGraphFunction(const ir::GraphFunction& function, const std::string& name) {
  auto node_error = [&](const ir::Node& node, const std::string& message) {
    return Error(fmt::format("@{}: {}", function.name, message),
                 ir::ErrorLocation{.op = node.op, .node = node.name});
  };
  if (function.output < 0 || function.output >= static_cast<ValueId>(function.nodes.size())) {
    throw Error(fmt::format("@{} has no result", function.name));
  }
  // Where every value comes from.
  std::vector<Value> values(function.nodes.size());
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    const ir::Node& node = function.nodes[i];
    ValueId id = static_cast<ValueId>(i);
    for (ValueId operand : node.inputs) {
      if (operand < 0 || operand >= id) {
        throw node_error(node, fmt::format("operand {} is not an earlier value", operand));
      }
    }
    Value& value = values[i];
    switch (node.kind) {
      case ir::NodeKind::kConstant:
        throw node_error(node,
                         "a constant inside a kernel's function (fusion hoists weights out as "
                         "parameters)");
      case ir::NodeKind::kCallKernel:
      case ir::NodeKind::kCallExtern:
        throw node_error(node, "a call of another function inside a kernel's function");
      case ir::NodeKind::kInput:
        if (!node.type.is_tensor()) throw node_error(node, "a parameter must be a tensor");
        value.leaf = Source{id, -1};
        break;
      case ir::NodeKind::kCall:
        if (node.type.is_tensor()) {
          value.leaf = Source{id, -1};
        } else {
          value.is_tuple = true;
          for (size_t f = 0; f < node.type.fields().size(); ++f) {
            if (!node.type.fields()[f].is_tensor()) {
              throw node_error(node, "a call result may be a tuple of tensors only");
            }
            value.fields.push_back(Value{false, Source{id, static_cast<int64_t>(f)}, {}});
          }
        }
        break;
      case ir::NodeKind::kTuple:
        value.is_tuple = true;
        for (ValueId operand : node.inputs) value.fields.push_back(values[operand]);
        break;
      case ir::NodeKind::kTupleGetItem: {
        const Value& tuple = values.at(static_cast<size_t>(node.inputs.at(0)));
        int64_t index = node.attrs.GetInt("index");
        if (!tuple.is_tuple || index < 0 || index >= static_cast<int64_t>(tuple.fields.size())) {
          throw node_error(node, fmt::format("tuple_get_item index {} is out of range", index));
        }
        value = tuple.fields[static_cast<size_t>(index)];
        break;
      }
    }
  }

  ComputeBuilder builder(name);
  std::map<Source, Buffer> buffers;
  for (ValueId param : function.params) {
    const ir::Node& node = function.node(param);
    if (node.kind != ir::NodeKind::kInput) throw node_error(node, "a parameter is not an input");
    buffers[Source{param, -1}] = builder.AddInput(node.name, node.type.tensor());
  }
  // Results computed by a call are written straight into the output parameters; a result that is
  // a parameter, or that is returned twice, is copied.
  std::vector<Source> results;
  FlattenValue(values[static_cast<size_t>(function.output)], results);
  std::vector<ir::TensorType> result_types = function.OutputTensorTypes();
  std::vector<Buffer> outputs;
  std::vector<bool> needs_copy;
  for (size_t r = 0; r < results.size(); ++r) {
    Buffer out = builder.AddOutput(SourceName(function, results[r]), result_types.at(r));
    outputs.push_back(out);
    const ir::Node& node = function.node(results[r].node);
    bool copy = node.kind != ir::NodeKind::kCall || buffers.count(results[r]) != 0;
    if (!copy) buffers[results[r]] = out;
    needs_copy.push_back(copy);
  }
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    const ir::Node& node = function.nodes[i];
    if (node.kind != ir::NodeKind::kCall) continue;
    ValueId id = static_cast<ValueId>(i);
    const ComputeDef& def = GetCompute(node.op);
    std::vector<ir::TensorType> input_types;
    std::vector<Buffer> inputs;
    for (ValueId operand : node.inputs) {
      const Value& value = values[static_cast<size_t>(operand)];
      if (value.is_tuple) throw node_error(node, "a call operand is a tuple");
      input_types.push_back(function.type_of(operand).tensor());
      inputs.push_back(buffers.at(value.leaf));
    }
    OpCall call;
    try {
      call = PrepareCall(node.op, node.attrs, input_types, node.type);
    } catch (const Error& e) {
      throw e.WithNode(node.name);
    }
    call.inputs = std::move(inputs);
    for (size_t f = 0; f < call.output_types.size(); ++f) {
      Source source{id, node.type.is_tensor() ? -1 : static_cast<int64_t>(f)};
      auto it = buffers.find(source);
      if (it == buffers.end()) {
        const ir::TensorType& type = call.output_types[f];
        it = buffers
                 .emplace(source, builder.AddIntermediate(SourceName(function, source), type.dtype,
                                                          type.shape))
                 .first;
      }
      call.outputs.push_back(it->second);
    }
    try {
      Lower(builder, def, call);
    } catch (const Error& e) {
      throw e.WithNode(node.name);
    }
  }
  for (size_t r = 0; r < results.size(); ++r) {
    if (!needs_copy[r]) continue;
    Buffer source = buffers.at(results[r]);
    builder.Compute("copy", outputs[r], AxisNames(source->shape.size()),
                    [&](const std::vector<ir::Var>& index) {
                      return ir::Load(source, std::vector<ir::Expr>(index.begin(), index.end()));
                    });
  }
  return builder.Finish();
}

}  // namespace tandem::kernels
