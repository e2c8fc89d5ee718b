#include "backends/runtime/dynamic_executable.h"

#include "backends/runtime/dynamic_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <numeric>
#include <optional>

#include "ir/error.h"

namespace tandem::backends {

namespace {

using kernels::AxisExtent;
using kernels::TensorExtents;

ir::Shape ShapeAt(const ir::Shape& bound_shape, const TensorExtents& extents,
                  const std::vector<int64_t>& sizes) {
  ir::Shape shape = bound_shape;
  for (size_t a = 0; a < extents.size(); ++a) {
    if (extents[a].dynamic()) shape[a] = extents[a].At(sizes);
  }
  return shape;
}

// The most sizes BuildDynamic makes the module at to decide the lengths of windows.
constexpr size_t kMostSizesCompared = 64;

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
  std::map<std::string, TensorExtents> values;
  // A length that two windows of an operand both fit at the sizes compared so far (a stride
  // along the axis) is decided by one more size, where they differ.
  for (;;) {
    functions.clear();
    for (const ir::IRModule& m : modules) functions.push_back(&m.Get(options.function));
    try {
      values = CompareAtSizes(ranges, sizes, functions);
      break;
    } catch (const UndecidedLength& undecided) {
      if (sizes.size() >= kMostSizesCompared) {
        throw ir::Error(
            fmt::format("{}: the module was compared at {} sizes and the lengths of "
                        "its strided windows are still undecided",
                        kernels::AxesText(ranges), sizes.size()));
      }
      sizes.push_back(undecided.sizes);
      modules.push_back(source.make(undecided.sizes));
    }
  }
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
  return SizesWithin(inputs, ranges_);
}

std::vector<int64_t> DynamicExecutable::SizesWithin(const std::vector<ir::Tensor>& inputs,
                                                    const kernels::DynamicRanges& allowed) const {
  if (inputs.size() != input_types_.size()) {
    throw ir::Error(fmt::format("the model takes {} inputs but {} were given", input_types_.size(),
                                inputs.size()));
  }
  const kernels::DynamicRanges& within = allowed;
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
