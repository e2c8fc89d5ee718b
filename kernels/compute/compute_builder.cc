#include "kernels/compute/compute_builder.h"

#include <fmt/format.h>

#include <limits>
#include <memory>

#include "ir/error.h"
#include "ir/kernel/functor.h"

namespace tandem::kernels {

using ir::Buffer;
using ir::Expr;
using ir::Var;

namespace {

// The accesses of one buffer: distinct index tuples in order of appearance.
struct Accesses {
  Buffer buffer;
  std::vector<std::vector<Expr>> indices;
};

bool SameIndices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameExpr(a[i], b[i])) return false;
  }
  return true;
}

// The covering range of the index expressions `values` of one axis.
ir::Range CoveringRange(const std::vector<Expr>& values) {
  bool all_same = true;
  bool all_constant = true;
  int64_t low = std::numeric_limits<int64_t>::max();
  int64_t high = std::numeric_limits<int64_t>::min();
  for (const Expr& v : values) {
    all_same = all_same && SameExpr(v, values[0]);
    int64_t c;
    if (ir::AsConstInt(v, &c)) {
      low = std::min(low, c);
      high = std::max(high, c);
    } else {
      all_constant = false;
    }
  }
  if (all_same) return ir::Range{values[0], Expr(1)};
  if (all_constant) return ir::Range{Expr(low), Expr(high - low + 1)};
  Expr minimum = values[0];
  Expr maximum = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    minimum = ir::Min(minimum, values[i]);
    maximum = ir::Max(maximum, values[i]);
  }
  return ir::Range{minimum, maximum - minimum + Expr(1)};
}

bool ContainsLoad(const Expr& e) {
  bool found = false;
  ir::VisitExprTree(e, [&](const Expr& x) { found = found || x->kind == ir::ExprKind::kLoad; });
  return found;
}

std::vector<Var> MakeVars(const std::vector<std::string>& names) {
  std::vector<Var> vars;
  for (const std::string& name : names) vars.push_back(ir::MakeVar(name));
  return vars;
}

ir::BufferRegion PointRegion(const Buffer& buffer, const std::vector<Var>& vars) {
  ir::BufferRegion region{buffer, {}};
  for (const Var& v : vars) region.region.push_back(ir::Range{v, Expr(1)});
  return region;
}

void CheckValue(const std::string& block, const Buffer& out, const Expr& value) {
  if (!value.defined()) throw ir::Error(fmt::format("block '{}' computes no value", block));
  if (value->dtype != out->dtype) {
    throw ir::Error(fmt::format("block '{}' computes a {} value for buffer '{}' of {}", block,
                                ir::ToString(value->dtype), out->name, ir::ToString(out->dtype)));
  }
}

// The highest value of `dtype` (+inf for float types): the identity of a minimum.
Expr HighestValue(ir::DataType dtype) {
  switch (dtype) {
    case ir::DataType::kFloat32:
    case ir::DataType::kFloat64:
    case ir::DataType::kFloat16:
      return ir::FloatImm(std::numeric_limits<double>::infinity(), dtype);
    case ir::DataType::kInt8:
      return ir::IntImm(std::numeric_limits<int8_t>::max(), dtype);
    case ir::DataType::kUInt8:
      return ir::IntImm(std::numeric_limits<uint8_t>::max(), dtype);
    case ir::DataType::kBool:
      return ir::IntImm(1, dtype);
    case ir::DataType::kInt32:
      return ir::IntImm(std::numeric_limits<int32_t>::max(), dtype);
    case ir::DataType::kInt64:
      return ir::IntImm(std::numeric_limits<int64_t>::max(), dtype);
  }
  return ir::IntImm(0, dtype);
}

}  // namespace

bool SameExpr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
    case ir::ExprKind::kIntImm:
      return a->int_value == b->int_value;
    case ir::ExprKind::kFloatImm:
      return a->float_value == b->float_value ||
             (a->float_value != a->float_value && b->float_value != b->float_value);
    case ir::ExprKind::kVar:
      return false;  // different nodes: different variables
    default:
      break;
  }
  if (a->name != b->name || a->buffer != b->buffer || a->operands.size() != b->operands.size()) {
    return false;
  }
  for (size_t i = 0; i < a->operands.size(); ++i) {
    if (!SameExpr(a->operands[i], b->operands[i])) return false;
  }
  return true;
}

std::vector<ir::BufferRegion> ReadRegions(const Expr& value, const Buffer& exclude) {
  std::vector<Accesses> accesses;
  ir::VisitExprTree(value, [&](const Expr& e) {
    if (e->kind != ir::ExprKind::kLoad || e->buffer == exclude) return;
    for (Accesses& a : accesses) {
      if (a.buffer != e->buffer) continue;
      for (const auto& seen : a.indices) {
        if (SameIndices(seen, e->operands)) return;
      }
      a.indices.push_back(e->operands);
      return;
    }
    accesses.push_back(Accesses{e->buffer, {e->operands}});
  });
  std::vector<ir::BufferRegion> regions;
  for (const Accesses& a : accesses) {
    ir::BufferRegion region{a.buffer, {}};
    for (size_t axis = 0; axis < a.buffer->shape.size(); ++axis) {
      std::vector<Expr> values;
      bool data_dependent = false;
      for (const auto& index : a.indices) {
        values.push_back(index[axis]);
        data_dependent = data_dependent || ContainsLoad(index[axis]);
      }
      // An index read from memory (a gather) may address any position of the axis.
      region.region.push_back(data_dependent ? ir::Range{Expr(0), Expr(a.buffer->shape[axis])}
                                             : CoveringRange(values));
    }
    regions.push_back(std::move(region));
  }
  return regions;
}

Expr ReducerIdentity(Reducer reducer, ir::DataType dtype) {
  if (reducer == Reducer::kSum) return ir::MakeConst(dtype, 0);
  if (reducer == Reducer::kProd) return ir::MakeConst(dtype, 1);
  if (reducer == Reducer::kMin) return HighestValue(dtype);
  switch (dtype) {
    case ir::DataType::kFloat32:
    case ir::DataType::kFloat64:
    case ir::DataType::kFloat16:
      return ir::FloatImm(-std::numeric_limits<double>::infinity(), dtype);
    case ir::DataType::kInt8:
      return ir::IntImm(std::numeric_limits<int8_t>::min(), dtype);
    case ir::DataType::kUInt8:
    case ir::DataType::kBool:
      return ir::IntImm(0, dtype);
    case ir::DataType::kInt32:
      return ir::IntImm(std::numeric_limits<int32_t>::min(), dtype);
    case ir::DataType::kInt64:
      return ir::IntImm(std::numeric_limits<int64_t>::min(), dtype);
  }
  return ir::IntImm(0, dtype);
}

std::vector<std::string> AxisNames(size_t rank, const std::string& prefix) {
  std::vector<std::string> names;
  for (size_t i = 0; i < rank; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

ComputeBuilder::ComputeBuilder(std::string function_name)
    : function_name_(std::move(function_name)) {}

std::string ComputeBuilder::UniqueBufferName(const std::string& name) {
  std::string candidate = name;
  for (int k = 1; buffer_names_.count(candidate) != 0; ++k) {
    candidate = fmt::format("{}_{}", name, k);
  }
  buffer_names_.insert(candidate);
  return candidate;
}

std::string ComputeBuilder::UniqueBlockName(const std::string& name) {
  std::string candidate = name;
  for (int k = 1; block_names_.count(candidate) != 0 || candidate == "root"; ++k) {
    candidate = fmt::format("{}_{}", name, k);
  }
  block_names_.insert(candidate);
  return candidate;
}

Buffer ComputeBuilder::AddInput(const std::string& name, const ir::TensorType& type) {
  inputs_.push_back(ir::MakeBuffer(UniqueBufferName(name), type.dtype, type.shape));
  return inputs_.back();
}

Buffer ComputeBuilder::AddOutput(const std::string& name, const ir::TensorType& type) {
  outputs_.push_back(ir::MakeBuffer(UniqueBufferName(name), type.dtype, type.shape));
  return outputs_.back();
}

Buffer ComputeBuilder::AddIntermediate(const std::string& name, ir::DataType dtype,
                                       const ir::Shape& shape) {
  intermediates_.push_back(ir::MakeBuffer(UniqueBufferName(name), dtype, shape));
  return intermediates_.back();
}

void ComputeBuilder::AddBlock(ir::Block block, const std::vector<Var>& loop_vars) {
  std::vector<Expr> values(loop_vars.begin(), loop_vars.end());
  std::vector<int64_t> extents;
  for (const ir::IterVar& iv : block->iter_vars) extents.push_back(iv.extent);
  ir::Stmt nest = ir::MakeBlockRealize(std::move(values), Expr(), std::move(block));
  for (size_t k = loop_vars.size(); k-- > 0;) {
    nest = ir::MakeFor(loop_vars[k], extents[k], ir::ForKind::kSerial, nest);
  }
  nests_.push_back(std::move(nest));
}

void ComputeBuilder::Compute(const std::string& block_name, const Buffer& out,
                             const std::vector<std::string>& names, const SpatialBody& body) {
  if (names.size() != out->shape.size()) {
    throw ir::Error(fmt::format("compute '{}': {} iterator names for buffer '{}' of rank {}",
                                block_name, names.size(), out->name, out->shape.size()));
  }
  auto block = std::make_shared<ir::BlockNode>();
  block->name = UniqueBlockName(block_name);
  std::vector<Var> vars = MakeVars(names);
  for (size_t k = 0; k < vars.size(); ++k) {
    block->iter_vars.push_back(ir::IterVar{vars[k], out->shape[k], ir::IterKind::kSpatial});
  }
  Expr value = body(vars);
  CheckValue(block->name, out, value);
  block->reads = ReadRegions(value, nullptr);
  block->writes = {PointRegion(out, vars)};
  block->body = ir::MakeStore(out, std::vector<Expr>(vars.begin(), vars.end()), value);
  AddBlock(std::move(block), MakeVars(names));
}

void ComputeBuilder::Reduce(const std::string& block_name, const Buffer& out,
                            const std::vector<std::string>& spatial_names,
                            const std::vector<ReduceAxis>& axes, Reducer reducer,
                            const ReduceBody& body) {
  if (spatial_names.size() != out->shape.size()) {
    throw ir::Error(fmt::format("reduction '{}': {} iterator names for buffer '{}' of rank {}",
                                block_name, spatial_names.size(), out->name, out->shape.size()));
  }
  Expr identity = ReducerIdentity(reducer, out->dtype);
  int64_t domain = 1;
  for (const ReduceAxis& axis : axes) domain *= axis.extent;
  if (domain == 0) {  // an empty reduction: the result is the identity
    Compute(block_name, out, spatial_names, [&](const std::vector<Var>&) { return identity; });
    return;
  }
  auto block = std::make_shared<ir::BlockNode>();
  block->name = UniqueBlockName(block_name);
  std::vector<std::string> names = spatial_names;
  for (const ReduceAxis& axis : axes) names.push_back(axis.name);
  std::vector<Var> vars = MakeVars(names);
  std::vector<Var> spatial(vars.begin(), vars.begin() + static_cast<int64_t>(spatial_names.size()));
  std::vector<Var> reduce(vars.begin() + static_cast<int64_t>(spatial_names.size()), vars.end());
  for (size_t k = 0; k < spatial.size(); ++k) {
    block->iter_vars.push_back(ir::IterVar{spatial[k], out->shape[k], ir::IterKind::kSpatial});
  }
  for (size_t k = 0; k < reduce.size(); ++k) {
    block->iter_vars.push_back(ir::IterVar{reduce[k], axes[k].extent, ir::IterKind::kReduction});
  }
  Expr value = body(spatial, reduce);
  CheckValue(block->name, out, value);
  std::vector<Expr> index(spatial.begin(), spatial.end());
  Expr current = ir::Load(out, index);
  Expr combined = reducer == Reducer::kSum    ? current + value
                  : reducer == Reducer::kProd ? current * value
                  : reducer == Reducer::kMin  ? ir::Min(current, value)
                                              : ir::Max(current, value);
  block->reads = ReadRegions(value, out);
  block->writes = {PointRegion(out, spatial)};
  block->init = ir::MakeStore(out, index, identity);
  block->body = ir::MakeStore(out, index, combined);
  AddBlock(std::move(block), MakeVars(names));
}

ir::KernelFunction ComputeBuilder::Finish() const {
  auto root = std::make_shared<ir::BlockNode>();
  root->name = "root";
  auto seq = std::make_shared<ir::SeqNode>();
  seq->stmts = nests_;
  root->body = seq;
  root->alloc_buffers = intermediates_;
  ir::KernelFunction function;
  function.name = function_name_;
  function.params = inputs_;
  function.params.insert(function.params.end(), outputs_.begin(), outputs_.end());
  function.num_outputs = static_cast<int>(outputs_.size());
  function.body = ir::MakeBlockRealize({}, Expr(), root);
  return function;
}

}  // namespace tandem::kernels
