#include "backends/runtime/dynamic_executable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>

#include "ir/error.h"

namespace tandem::backends {

namespace {

using kernels::AxisExtent;
using kernels::TensorExtents;

// Copies the common prefix block of `from` (shape `from_shape`) into `to` (shape `to_shape`):
// index tuples below both shapes on every axis.
void CopyPrefix(const uint8_t* from, const ir::Shape& from_shape, uint8_t* to,
                const ir::Shape& to_shape, int64_t element_bytes, size_t axis = 0) {
  if (axis == from_shape.size()) {
    std::memcpy(to, from, static_cast<size_t>(element_bytes));
    return;
  }
  int64_t count = std::min(from_shape[axis], to_shape[axis]);
  int64_t from_stride = element_bytes;
  int64_t to_stride = element_bytes;
  for (size_t a = axis + 1; a < from_shape.size(); ++a) {
    from_stride *= from_shape[a];
    to_stride *= to_shape[a];
  }
  if (axis + 1 == from_shape.size()) {
    std::memcpy(to, from, static_cast<size_t>(count * element_bytes));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    CopyPrefix(from + i * from_stride, from_shape, to + i * to_stride, to_shape, element_bytes,
               axis + 1);
  }
}

ir::Shape ShapeAt(const ir::Shape& bound_shape, const TensorExtents& extents,
                  const std::vector<int64_t>& sizes) {
  ir::Shape shape = bound_shape;
  for (size_t a = 0; a < extents.size(); ++a) {
    if (extents[a].dynamic()) shape[a] = extents[a].At(sizes);
  }
  return shape;
}

// Steps of BuildDynamic's comparison: the extents of one value from its types at the sizes.
// sizes[0] has every symbol at its bound, sizes[1 + k] symbol k one below it; any further ones
// check the extents found from those.
class Comparison {
 public:
  Comparison(const kernels::DynamicRanges& ranges, std::vector<std::vector<int64_t>> sizes,
             std::vector<const ir::GraphFunction*> functions)
      : ranges_(ranges), sizes_(std::move(sizes)), functions_(std::move(functions)) {}

  std::map<std::string, TensorExtents> Run() {
    const ir::GraphFunction& main = *functions_[0];
    for (size_t f = 1; f < functions_.size(); ++f) {
      if (functions_[f]->nodes.size() != main.nodes.size() ||
          functions_[f]->params.size() != main.params.size()) {
        Fail(fmt::format("the graph has {} nodes at {} but {} at {}", main.nodes.size(), At(0),
                         functions_[f]->nodes.size(), At(f)));
      }
    }
    std::map<std::string, TensorExtents> values;
    for (size_t i = 0; i < main.nodes.size(); ++i) {
      const ir::Node& node = main.nodes[i];
      for (size_t f = 1; f < functions_.size(); ++f) {
        const ir::Node& other = functions_[f]->nodes[i];
        if (other.kind != node.kind || other.op != node.op || other.name != node.name) {
          Fail(fmt::format("node %{} at {} is %{} at {}", node.name, At(0), other.name, At(f)));
        }
      }
      if (node.type.is_tuple()) {
        // A call with several results (split): each element's extents, by element name.
        for (size_t k = 0; k < node.type.fields().size(); ++k) {
          TensorExtents extents = ExtentsOf(i, static_cast<int>(k));
          if (kernels::IsDynamic(extents)) {
            values[kernels::TupleElementName(node.name, k)] = std::move(extents);
          }
        }
        continue;
      }
      TensorExtents extents = ExtentsOf(i);
      if (!kernels::IsDynamic(extents)) continue;
      if (node.kind == ir::NodeKind::kCallKernel || node.kind == ir::NodeKind::kCallExtern) {
        Fail(
            fmt::format("%{} is a {} of a dynamic value; dynamic builds lower kernels "
                        "themselves (use a pipeline without kernel tuning or backend placement)",
                        node.name, ir::ToString(node.kind)));
      }
      if (node.kind == ir::NodeKind::kConstant) CheckConstant(i, extents);
      values[node.name] = std::move(extents);
    }
    return values;
  }

 private:
  [[noreturn]] void Fail(const std::string& reason) const {
    throw ir::Error(fmt::format("{}: {}", kernels::AxesText(ranges_), reason));
  }

  std::string At(size_t f) const { return kernels::SizesText(ranges_, sizes_[f]); }

  // The type of node i at size f: the node's, or its element `element` (of a tuple).
  const ir::TensorType* TypeAt(size_t f, size_t i, int element) const {
    const ir::Type& type = functions_[f]->nodes[i].type;
    if (element < 0) return type.is_tensor() ? &type.tensor() : nullptr;
    if (!type.is_tuple() || static_cast<size_t>(element) >= type.fields().size() ||
        !type.fields()[static_cast<size_t>(element)].is_tensor()) {
      return nullptr;
    }
    return &type.fields()[static_cast<size_t>(element)].tensor();
  }

  // The extents of node i (or of its tuple element `element`) from its types at the sizes.
  TensorExtents ExtentsOf(size_t i, int element = -1) const {
    const ir::Node& node = functions_[0]->nodes[i];
    std::string name = element < 0 ? node.name : fmt::format("{} (result {})", node.name, element);
    const ir::TensorType* bound_type = TypeAt(0, i, element);
    if (!bound_type) Fail(fmt::format("%{} is {}: not a tensor", name, ir::ToString(node.type)));
    const ir::TensorType& bound = *bound_type;
    TensorExtents extents(bound.shape.size());
    std::vector<const ir::TensorType*> types = {bound_type};
    for (size_t f = 1; f < functions_.size(); ++f) {
      const ir::TensorType* type = TypeAt(f, i, element);
      if (!type || type->shape.size() != bound.shape.size() || type->dtype != bound.dtype) {
        Fail(fmt::format("%{} is {} at {} but {} at {}", name, ir::ToString(node.type), At(0),
                         ir::ToString(functions_[f]->nodes[i].type), At(f)));
      }
      types.push_back(type);
    }
    for (size_t a = 0; a < bound.shape.size(); ++a) {
      // The slope in each symbol (its size one below the bound); one symbol at most moves it.
      AxisExtent extent{0, bound.shape[a], 0};
      for (size_t k = 0; k < ranges_.size(); ++k) {
        int64_t scale = bound.shape[a] - types[1 + k]->shape[a];
        if (scale == 0) continue;
        if (extent.dynamic()) {
          Fail(fmt::format("axis {} of %{} changes with both {} and {}", a, name,
                           ranges_[extent.symbol].symbol, ranges_[k].symbol));
        }
        if (scale < 0) {
          Fail(fmt::format("axis {} of %{} shrinks as {} grows", a, name, ranges_[k].symbol));
        }
        extent = {scale, bound.shape[a] - scale * ranges_[k].bound, k};
      }
      for (size_t f = 1 + ranges_.size(); f < functions_.size(); ++f) {
        if (types[f]->shape[a] != extent.At(sizes_[f])) {
          Fail(
              fmt::format("axis {} of %{} is not an affine function of {}", a, name,
                          extent.dynamic()
                              ? ranges_[extent.symbol].symbol
                              : fmt::format("{}", fmt::join(kernels::SymbolsOf(ranges_), " or "))));
        }
      }
      if (extent.dynamic() && extent.At(ranges_[extent.symbol].minimum) < 0) {
        Fail(fmt::format("axis {} of %{} has a negative length at {}={}", a, name,
                         ranges_[extent.symbol].symbol, ranges_[extent.symbol].minimum));
      }
      extents[a] = extent;
    }
    return extents;
  }

  // A constant that changes with the sizes must be the valid prefix of its value at the bounds.
  void CheckConstant(size_t i, const TensorExtents& extents) const {
    const ir::Tensor& bound = functions_[0]->nodes[i].value;
    for (size_t f = 1; f < functions_.size(); ++f) {
      const ir::Tensor& small = functions_[f]->nodes[i].value;
      ir::Tensor prefix(small.type());
      CopyPrefix(static_cast<const uint8_t*>(bound.raw_data()), bound.shape(),
                 static_cast<uint8_t*>(prefix.raw_data()), small.shape(),
                 ir::SizeOf(small.dtype()));
      if (small.num_bytes() > 0 && std::memcmp(prefix.raw_data(), small.raw_data(),
                                               static_cast<size_t>(small.num_bytes()))) {
        Fail(fmt::format(
            "the constant %{} {} at {} is not the leading part of its value at {}",
            functions_[0]->nodes[i].name,
            kernels::ExtentsToString(extents, bound.shape(), kernels::SymbolsOf(ranges_)), At(f),
            At(0)));
      }
    }
  }

  const kernels::DynamicRanges& ranges_;
  std::vector<std::vector<int64_t>> sizes_;
  std::vector<const ir::GraphFunction*> functions_;
};

// The low size at which BuildDynamic compares the module: the range's minimum, or 2 when the
// minimum is 1 and the range reaches 4. At size 1 broadcasting and constant folding degenerate:
// an expand to [1, ...] is no op, and a rotary table sliced to position 0 holds cos 0 = 1 and
// sin 0 = 0, so SimplifyExpr drops its multiply. Such a module has fewer nodes but computes the
// same function as the module at the bounds restricted to size 1; every size the samples do not
// reach, 1 among them, is run as the bounds' module restricted to it.
int64_t LowSample(const kernels::DynamicRange& range) {
  return range.minimum == 1 && range.bound >= 4 ? 2 : range.minimum;
}

// `fn` with a new first node, the parameter `name` of type i64[symbols], listed last among the
// parameters.
ir::GraphFunction WithExtentParameter(const ir::GraphFunction& fn, const std::string& name,
                                      size_t symbols) {
  ir::GraphFunction out = fn;
  ir::Node param;
  param.kind = ir::NodeKind::kInput;
  param.name = name;
  param.type = ir::TensorType{{static_cast<int64_t>(symbols)}, ir::DataType::kInt64, ""};
  out.nodes.insert(out.nodes.begin(), param);
  for (size_t i = 1; i < out.nodes.size(); ++i) {
    for (ir::ValueId& in : out.nodes[i].inputs) ++in;
  }
  for (ir::ValueId& p : out.params) ++p;
  out.params.push_back(0);
  ++out.output;
  return out;
}

}  // namespace

std::unique_ptr<DynamicExecutable> BuildDynamic(const DynamicModuleSource& source,
                                                const BuildOptions& options) {
  const kernels::DynamicRanges& ranges = source.ranges;
  kernels::CheckDynamicRanges(ranges);
  // 1. The module at the bounds, at each symbol one below its bound, and at the low sizes,
  //    compared.
  std::vector<std::vector<int64_t>> sizes = {kernels::BoundsOf(ranges)};
  bool low_sizes_differ = false;
  std::vector<int64_t> low_sizes;
  for (size_t k = 0; k < ranges.size(); ++k) {
    sizes.push_back(sizes[0]);
    --sizes.back()[k];
    low_sizes.push_back(LowSample(ranges[k]));
    low_sizes_differ = low_sizes_differ || low_sizes.back() < ranges[k].bound - 1 || k > 0;
  }
  if (low_sizes_differ) sizes.push_back(low_sizes);
  std::vector<ir::IRModule> modules;
  for (const std::vector<int64_t>& at : sizes) modules.push_back(source.make(at));
  std::vector<const ir::GraphFunction*> functions;
  for (const ir::IRModule& m : modules) functions.push_back(&m.Get(options.function));
  std::map<std::string, TensorExtents> values = Comparison(ranges, sizes, functions).Run();
  const ir::GraphFunction& main = *functions[0];

  auto exe = std::unique_ptr<DynamicExecutable>(new DynamicExecutable());
  exe->ranges_ = ranges;
  std::vector<bool> followed(ranges.size(), false);
  for (ir::ValueId p : main.params) {
    const ir::Node& param = main.node(p);
    exe->input_names_.push_back(param.name);
    exe->input_types_.push_back(param.type.tensor());
    auto it = values.find(param.name);
    exe->input_extents_.push_back(it == values.end() ? TensorExtents{} : it->second);
    for (const kernels::AxisExtent& e : exe->input_extents_.back()) {
      if (e.dynamic()) followed[e.symbol] = true;
    }
  }
  for (size_t k = 0; k < ranges.size(); ++k) {
    if (!followed[k]) {
      throw ir::Error(fmt::format("dynamic axis '{}': no input of the model changes with it",
                                  ranges[k].symbol));
    }
  }
  std::vector<ir::ValueId> results = {main.output};
  if (main.node(main.output).kind == ir::NodeKind::kTuple) results = main.node(main.output).inputs;
  for (ir::ValueId r : results) {
    auto it = values.find(main.node(r).name);
    exe->output_extents_.push_back(it == values.end() ? TensorExtents{} : it->second);
  }

  // 2. The extent parameter, and the build with dynamic lowering.
  std::string extent_name = kernels::kDynamicExtentParam;
  auto taken = [&](const std::string& name) {
    for (const ir::Node& node : main.nodes) {
      if (node.name == name) return true;
    }
    return false;
  };
  for (int k = 1; taken(extent_name); ++k) {
    extent_name = fmt::format("{}_{}", kernels::kDynamicExtentParam, k);
  }
  ir::IRModule module = modules[0];
  module.Add(WithExtentParameter(main, extent_name, ranges.size()));
  auto lowering = std::make_shared<kernels::DynamicLowering>();
  lowering->ranges = ranges;
  lowering->values = std::move(values);
  lowering->extent_value = extent_name;
  BuildOptions dynamic_options = options;
  dynamic_options.legalize.dynamic = lowering;
  exe->executable_ = Build(module, dynamic_options);
  for (size_t k = 0; k < exe->input_types_.size(); ++k) {
    exe->staged_inputs_.push_back(kernels::IsDynamic(exe->input_extents_[k])
                                      ? ir::Tensor(exe->input_types_[k])
                                      : ir::Tensor());
  }
  for (const ir::TensorType& type : exe->executable_->output_types()) {
    exe->staged_outputs_.emplace_back(type);
  }
  exe->extent_ = ir::Tensor::FromInt64s({static_cast<int64_t>(ranges.size())}, sizes[0]);
  return exe;
}

std::vector<int64_t> DynamicExecutable::SizesOf(const std::vector<ir::Tensor>& inputs) const {
  return SizesWithin(inputs, ranges_.front());
}

std::vector<int64_t> DynamicExecutable::SizesWithin(const std::vector<ir::Tensor>& inputs,
                                                    const kernels::DynamicRange& allowed) const {
  if (inputs.size() != input_types_.size()) {
    throw ir::Error(fmt::format("the model takes {} inputs but {} were given", input_types_.size(),
                                inputs.size()));
  }
  kernels::DynamicRanges within = ranges_;
  within.front() = allowed;
  std::vector<int64_t> sizes(ranges_.size(), -1);
  std::vector<std::string> from(ranges_.size());
  std::vector<std::string> symbols = kernels::SymbolsOf(ranges_);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ir::TensorType& bound = input_types_[k];
    const ir::Tensor& input = inputs[k];
    auto mismatch = [&] {
      return ir::Error(fmt::format(
          "input '{}' is {}{} but the model takes {}{} with {}", input_names_[k],
          ir::ToString(input.dtype()), ir::ShapeToString(input.shape()), ir::ToString(bound.dtype),
          kernels::ExtentsToString(input_extents_[k], bound.shape, symbols),
          kernels::ToString(within)));
    };
    if (input.dtype() != bound.dtype || input.shape().size() != bound.shape.size()) {
      throw mismatch();
    }
    for (size_t a = 0; a < bound.shape.size(); ++a) {
      const AxisExtent* e = a < input_extents_[k].size() && input_extents_[k][a].dynamic()
                                ? &input_extents_[k][a]
                                : nullptr;
      int64_t size = input.shape()[a];
      if (!e) {
        if (size != bound.shape[a]) throw mismatch();
        continue;
      }
      const kernels::DynamicRange& range = within[e->symbol];
      int64_t scaled = size - e->offset;
      if (scaled % e->scale != 0) throw mismatch();
      int64_t here = scaled / e->scale;
      if (here < range.minimum || here > range.bound) throw mismatch();
      int64_t& n = sizes[e->symbol];
      if (n >= 0 && here != n) {
        throw ir::Error(fmt::format("input '{}' gives {}={} but input '{}' gives {}={}",
                                    input_names_[k], range.symbol, here, from[e->symbol],
                                    range.symbol, n));
      }
      n = here;
      from[e->symbol] = input_names_[k];
    }
  }
  return sizes;
}

std::vector<ir::Tensor> DynamicExecutable::Run(const std::vector<ir::Tensor>& inputs) {
  return RunAt(inputs, SizesOf(inputs));
}

std::vector<ir::Tensor> DynamicExecutable::RunAt(const std::vector<ir::Tensor>& inputs,
                                                 const std::vector<int64_t>& sizes) {
  std::vector<ir::Tensor> arguments;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!staged_inputs_[k].defined() || !kernels::IsDynamic(input_extents_[k])) {
      arguments.push_back(inputs[k]);
      continue;
    }
    // Past the prefix, the staged tensor holds zeros (it starts zero-filled) or an earlier
    // run's inputs: values a valid result never depends on, and valid indices for a gather.
    ir::Tensor& staged = staged_inputs_[k];
    CopyPrefix(static_cast<const uint8_t*>(inputs[k].raw_data()), inputs[k].shape(),
               static_cast<uint8_t*>(staged.raw_data()), staged.shape(),
               ir::SizeOf(staged.dtype()));
    arguments.push_back(staged);
  }
  for (size_t k = 0; k < sizes.size(); ++k) extent_.data<int64_t>()[k] = sizes[k];
  arguments.push_back(extent_);
  executable_->RunInto(arguments, staged_outputs_);
  std::vector<ir::Tensor> outputs;
  for (size_t k = 0; k < staged_outputs_.size(); ++k) {
    const ir::Tensor& full = staged_outputs_[k];
    ir::Tensor out(ir::TensorType{ShapeAt(full.shape(), output_extents_[k], sizes), full.dtype(),
                                  full.type().layout});
    CopyPrefix(static_cast<const uint8_t*>(full.raw_data()), full.shape(),
               static_cast<uint8_t*>(out.raw_data()), out.shape(), ir::SizeOf(full.dtype()));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

std::vector<std::string> DynamicExecutable::InputSignatures() const {
  std::vector<std::string> out;
  for (size_t k = 0; k < input_types_.size(); ++k) {
    out.push_back(fmt::format("{}: {}{}", input_names_[k], ir::ToString(input_types_[k].dtype),
                              kernels::ExtentsToString(input_extents_[k], input_types_[k].shape,
                                                       kernels::SymbolsOf(ranges_))));
  }
  return out;
}

std::vector<std::string> DynamicExecutable::OutputSignatures() const {
  std::vector<std::string> out;
  for (size_t k = 0; k < staged_outputs_.size(); ++k) {
    const ir::Tensor& t = staged_outputs_[k];
    out.push_back(fmt::format(
        "{}{}", ir::ToString(t.dtype()),
        kernels::ExtentsToString(output_extents_[k], t.shape(), kernels::SymbolsOf(ranges_))));
  }
  return out;
}

}  // namespace tandem::backends
