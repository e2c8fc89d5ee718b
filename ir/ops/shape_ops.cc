// Shape ops: reshape, transpose, flatten, concat, split, strided_slice, squeeze, expand_dims, pad.
//
// Every result keeps the operand's dtype and has no layout (a shape op changes what the axes
// mean), except strided_slice's, which keeps its operand's layout (its axes mean what they did).
// Reference semantics move elements as bytes, so every dtype is copied exactly.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "ir/checked_math.h"
#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

std::string ListToString(const std::vector<int64_t>& values) {
  return ToString(AttrValue(values));
}

// Normalizes possibly negative axes against `rank`; duplicates and out-of-range axes are errors.
std::vector<int64_t> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                   const std::string& attribute) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) {
    int64_t normalized = NormalizeAxis(axis, rank, "axis");
    if (std::find(out.begin(), out.end(), normalized) != out.end()) {
      throw Error(fmt::format("attribute '{}' {} names axis {} twice", attribute,
                              ListToString(axes), normalized));
    }
    out.push_back(normalized);
  }
  return out;
}

// Copies element `from` of `source` to element `to` of `target` (same dtype).
void CopyElement(const Tensor& source, int64_t from, Tensor& target, int64_t to) {
  size_t size = static_cast<size_t>(SizeOf(source.dtype()));
  std::memcpy(static_cast<uint8_t*>(target.raw_data()) + static_cast<size_t>(to) * size,
              static_cast<const uint8_t*>(source.raw_data()) + static_cast<size_t>(from) * size,
              size);
}

// A new tensor of `type` holding the elements of `x` in row-major order (reshape-like ops).
Tensor CopyData(const Tensor& x, const TensorType& type) {
  Tensor out(type);
  if (out.num_bytes() != x.num_bytes() || out.dtype() != x.dtype()) {
    throw Error(fmt::format("cannot copy a tensor of type {} into type {}", ToString(x.type()),
                            ToString(type)));
  }
  if (x.num_bytes() > 0) {
    std::memcpy(out.raw_data(), x.raw_data(), static_cast<size_t>(x.num_bytes()));
  }
  return out;
}

// Registers an op with one operand, pattern injective.
void RegisterUnaryShapeOp(OpRegistry& registry, const std::string& name, const std::string& doc,
                          std::vector<AttrSpec> attrs, InferTypeFunction infer,
                          ReferenceFunction reference) {
  OpDef def;
  def.name = name;
  def.doc = doc;
  def.attrs = std::move(attrs);
  def.pattern = PatternKind::kInjective;
  def.infer_type = std::move(infer);
  def.reference = std::move(reference);
  registry.Register(std::move(def));
}

// Reference of ops whose result is the operand's data in the same order (reshape, flatten,
// squeeze, expand_dims).
std::vector<Tensor> SameDataReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                      const Type& output) {
  return {CopyData(inputs.at(0), output.tensor())};
}

// ---- reshape ----

Shape ReshapeShape(const Shape& in, const std::vector<int64_t>& newshape) {
  Shape out;
  int64_t inferred = -1;
  for (size_t i = 0; i < newshape.size(); ++i) {
    int64_t v = newshape[i];
    if (v == -1) {
      if (inferred >= 0) {
        throw Error(fmt::format("newshape {} has more than one -1", ListToString(newshape)));
      }
      inferred = static_cast<int64_t>(i);
      out.push_back(1);
    } else if (v == 0) {
      if (i >= in.size()) {
        throw Error(
            fmt::format("newshape {} has 0 at position {} (copy the input extent) but the "
                        "input {} has rank {}",
                        ListToString(newshape), i, ShapeToString(in), in.size()));
      }
      out.push_back(in[i]);
    } else if (v < 0) {
      throw Error(
          fmt::format("newshape {} has extent {} (allowed: positive extents, 0 to copy "
                      "the input extent, -1 to infer one extent)",
                      ListToString(newshape), v));
    } else {
      out.push_back(v);
    }
  }
  int64_t total = NumElements(in);
  auto count = [&](const Shape& shape) {
    try {
      return NumElements(shape);
    } catch (const Error& e) {
      throw Error(fmt::format("newshape {}: {}", ListToString(newshape), e.message()));
    }
  };
  if (inferred >= 0) {
    int64_t known = count(out);
    if (known == 0 || total % known != 0) {
      throw Error(
          fmt::format("cannot reshape {} ({} elements) to newshape {}: the -1 extent "
                      "cannot be inferred",
                      ShapeToString(in), total, ListToString(newshape)));
    }
    out[static_cast<size_t>(inferred)] = total / known;
  }
  if (count(out) != total) {
    throw Error(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)",
                            ShapeToString(in), total, ShapeToString(out), NumElements(out)));
  }
  return out;
}

void RegisterReshape(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "reshape",
      "Same elements in row-major order with shape `newshape`: -1 infers one extent, 0 copies "
      "the input extent at that position. Element counts must match.",
      {{"newshape", AttrKind::kInts, std::nullopt, "result shape (with -1 / 0 as above)"}},
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        return TensorType{ReshapeShape(x.shape, attrs.GetInts("newshape")), x.dtype, ""};
      },
      SameDataReference);
}

// ---- transpose ----

std::vector<int64_t> Permutation(int64_t rank, const Attrs& attrs) {
  const std::vector<int64_t>& axes = attrs.GetInts("axes");
  if (axes.empty()) {
    std::vector<int64_t> reverse;
    for (int64_t i = rank - 1; i >= 0; --i) reverse.push_back(i);
    return reverse;
  }
  if (static_cast<int64_t>(axes.size()) != rank) {
    throw Error(fmt::format("axes {} is not a permutation of the {} axes of the input",
                            ListToString(axes), rank));
  }
  try {
    return NormalizeAxes(axes, rank, "axes");
  } catch (const Error& e) {
    throw Error(fmt::format("axes {} is not a permutation of the {} axes of the input: {}",
                            ListToString(axes), rank, e.message()));
  }
}

void RegisterTranspose(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "transpose",
      "Permutes axes: result axis k is input axis axes[k] ([] = reverse all axes).",
      {{"axes", AttrKind::kInts, AttrValue(std::vector<int64_t>{}), "permutation ([] = reverse)"}},
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        Shape shape;
        for (int64_t axis : Permutation(x.rank(), attrs)) {
          shape.push_back(x.shape[static_cast<size_t>(axis)]);
        }
        return TensorType{shape, x.dtype, ""};
      },
      [](const std::vector<Tensor>& inputs, const Attrs& attrs,
         const Type& output) -> std::vector<Tensor> {
        const Tensor& x = inputs.at(0);
        std::vector<int64_t> permutation = Permutation(x.rank(), attrs);
        std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
        Tensor out(output.tensor());
        ForEachIndex(out.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
          int64_t offset = 0;
          for (size_t k = 0; k < index.size(); ++k) {
            offset += index[k] * in_strides[static_cast<size_t>(permutation[k])];
          }
          CopyElement(x, offset, out, flat);
        });
        return {out};
      });
}

// ---- flatten ----

void RegisterFlatten(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "flatten",
      "ONNX Flatten: [prod(shape[:axis]), prod(shape[axis:])]; axis in [-rank, rank].",
      {{"axis", AttrKind::kInt, AttrValue(int64_t{1}), "first axis of the second result axis"}},
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        int64_t axis = attrs.GetInt("axis");
        if (axis < -x.rank() || axis > x.rank()) {
          throw Error(fmt::format("axis {} is out of range [{}, {}] for an input of rank {}", axis,
                                  -x.rank(), x.rank(), x.rank()));
        }
        if (axis < 0) axis += x.rank();
        Shape outer(x.shape.begin(), x.shape.begin() + axis);
        Shape inner(x.shape.begin() + axis, x.shape.end());
        return TensorType{{NumElements(outer), NumElements(inner)}, x.dtype, ""};
      },
      SameDataReference);
}

// ---- squeeze / expand_dims ----

void RegisterSqueeze(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "squeeze", "Removes the listed axes, each of extent 1 ([] = every extent-1 axis).",
      {{"axes", AttrKind::kInts, AttrValue(std::vector<int64_t>{}), "axes to remove"}},
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        const std::vector<int64_t>& axes = attrs.GetInts("axes");
        std::vector<bool> remove(x.shape.size(), false);
        if (axes.empty()) {
          for (size_t i = 0; i < x.shape.size(); ++i) remove[i] = x.shape[i] == 1;
        }
        for (int64_t axis : NormalizeAxes(axes, x.rank(), "axes")) {
          int64_t extent = x.shape[static_cast<size_t>(axis)];
          if (extent != 1) {
            throw Error(fmt::format("cannot squeeze axis {} of shape {}: its extent is {}, not 1",
                                    axis, ShapeToString(x.shape), extent));
          }
          remove[static_cast<size_t>(axis)] = true;
        }
        Shape shape;
        for (size_t i = 0; i < x.shape.size(); ++i) {
          if (!remove[i]) shape.push_back(x.shape[i]);
        }
        return TensorType{shape, x.dtype, ""};
      },
      SameDataReference);
}

void RegisterExpandDims(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "expand_dims",
      "ONNX Unsqueeze: inserts extent-1 axes at the listed positions of the result (negative "
      "positions count from the end of the result).",
      {{"axes", AttrKind::kInts, std::nullopt, "positions of the new axes in the result"}},
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        const std::vector<int64_t>& axes = attrs.GetInts("axes");
        int64_t rank = x.rank() + static_cast<int64_t>(axes.size());
        std::vector<bool> inserted(static_cast<size_t>(rank), false);
        for (int64_t axis : NormalizeAxes(axes, rank, "axes")) {
          inserted[static_cast<size_t>(axis)] = true;
        }
        Shape shape;
        size_t next = 0;
        for (size_t i = 0; i < inserted.size(); ++i) {
          shape.push_back(inserted[i] ? 1 : x.shape[next++]);
        }
        return TensorType{shape, x.dtype, ""};
      },
      SameDataReference);
}

// ---- concat / split ----

Type InferConcat(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& first = TensorOperand(inputs, 0, "x0");
  DataType dtype = CommonDataType(inputs);
  if (first.rank() == 0) throw Error("cannot concatenate scalars (operand 0 has rank 0)");
  int64_t axis = NormalizeAxis(attrs.GetInt("axis"), first.rank(), "axis");
  Shape shape = first.shape;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& x = TensorOperand(inputs, i, fmt::format("x{}", i));
    if (x.rank() != first.rank()) {
      throw Error(fmt::format("operand {} has rank {} but operand 0 has rank {}", i, x.rank(),
                              first.rank()));
    }
    for (int64_t d = 0; d < first.rank(); ++d) {
      size_t u = static_cast<size_t>(d);
      if (d != axis && x.shape[u] != first.shape[u]) {
        throw Error(
            fmt::format("operand {} has shape {} but operand 0 has shape {}: extents "
                        "must match on every axis but the concat axis {} (axis {}: {} "
                        "vs {})",
                        i, ShapeToString(x.shape), ShapeToString(first.shape), axis, d, x.shape[u],
                        first.shape[u]));
      }
    }
    shape[static_cast<size_t>(axis)] =
        CheckedAdd(shape[static_cast<size_t>(axis)], x.shape[static_cast<size_t>(axis)],
                   "the concatenated extent along axis");
  }
  return TensorType{shape, dtype, ""};
}

// Number of elements of `shape` from axis `begin` on.
int64_t TrailingElements(const Shape& shape, int64_t begin) {
  return NumElements(Shape(shape.begin() + begin, shape.end()));
}

std::vector<Tensor> ConcatReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                    const Type& output) {
  Tensor out(output.tensor());
  int64_t axis = NormalizeAxis(attrs.GetInt("axis"), out.rank(), "axis");
  int64_t outer = NumElements(Shape(out.shape().begin(), out.shape().begin() + axis));
  size_t element_size = static_cast<size_t>(SizeOf(out.dtype()));
  auto* target = static_cast<uint8_t*>(out.raw_data());
  // Row-major: for every outer index, the operands' blocks follow one another.
  size_t written = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& x : inputs) {
      size_t block = static_cast<size_t>(TrailingElements(x.shape(), axis)) * element_size;
      if (block == 0) continue;
      std::memcpy(target + written,
                  static_cast<const uint8_t*>(x.raw_data()) + static_cast<size_t>(o) * block,
                  block);
      written += block;
    }
  }
  if (written != static_cast<size_t>(out.num_bytes())) {
    throw Error(fmt::format("operands do not fill the result type {}", ToString(out.type())));
  }
  return {out};
}

void RegisterConcat(OpRegistry& registry) {
  OpDef def;
  def.name = "concat";
  def.doc =
      "Concatenates its operands along `axis`; all operands have one dtype and rank, and equal "
      "extents on every other axis.";
  def.min_inputs = 1;
  def.max_inputs = -1;
  def.attrs = {{"axis", AttrKind::kInt, AttrValue(int64_t{0}), "concatenation axis"}};
  def.pattern = PatternKind::kInjective;
  def.infer_type = InferConcat;
  def.reference = ConcatReference;
  registry.Register(std::move(def));
}

Type InferSplit(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& x = TensorOperand(inputs, 0, "x");
  if (x.rank() == 0) throw Error("cannot split a scalar");
  int64_t axis = NormalizeAxis(attrs.GetInt("axis"), x.rank(), "axis");
  const std::vector<int64_t>& sections = attrs.GetInts("sections");
  if (sections.empty()) throw Error("attribute 'sections' must list at least one part");
  int64_t total = 0;
  for (int64_t section : sections) {
    if (section < 0) {
      throw Error(
          fmt::format("sections {} has a negative extent {}", ListToString(sections), section));
    }
    total = CheckedAdd(total, section, "the sum of sections");
  }
  int64_t extent = x.shape[static_cast<size_t>(axis)];
  if (total != extent) {
    throw Error(fmt::format("sections {} sum to {} but axis {} of {} has extent {}",
                            ListToString(sections), total, axis, ShapeToString(x.shape), extent));
  }
  std::vector<Type> parts;
  for (int64_t section : sections) {
    Shape shape = x.shape;
    shape[static_cast<size_t>(axis)] = section;
    parts.push_back(TensorType{shape, x.dtype, ""});
  }
  return Type::Tuple(std::move(parts));
}

std::vector<Tensor> SplitReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                   const Type& output) {
  const Tensor& x = inputs.at(0);
  int64_t axis = NormalizeAxis(attrs.GetInt("axis"), x.rank(), "axis");
  int64_t outer = NumElements(Shape(x.shape().begin(), x.shape().begin() + axis));
  size_t element_size = static_cast<size_t>(SizeOf(x.dtype()));
  size_t row = static_cast<size_t>(TrailingElements(x.shape(), axis)) * element_size;
  size_t inner = static_cast<size_t>(TrailingElements(x.shape(), axis + 1)) * element_size;
  const auto* source = static_cast<const uint8_t*>(x.raw_data());
  std::vector<Tensor> parts;
  size_t start = 0;  // byte offset of the current part within one row
  for (const Type& field : output.fields()) {
    Tensor part(field.tensor());
    size_t block = static_cast<size_t>(part.shape()[static_cast<size_t>(axis)]) * inner;
    auto* target = static_cast<uint8_t*>(part.raw_data());
    for (int64_t o = 0; o < outer && block > 0; ++o) {
      size_t u = static_cast<size_t>(o);
      std::memcpy(target + u * block, source + u * row + start, block);
    }
    start += block;
    parts.push_back(part);
  }
  return parts;
}

void RegisterSplit(OpRegistry& registry) {
  OpDef def;
  def.name = "split";
  def.doc =
      "Splits `x` along `axis` into parts of the extents in `sections` (which must sum to the "
      "axis extent); the result is a tuple with one tensor per part.";
  def.attrs = {
      {"axis", AttrKind::kInt, AttrValue(int64_t{0}), "split axis"},
      {"sections", AttrKind::kInts, std::nullopt, "extent of each part"},
  };
  def.pattern = PatternKind::kInjective;
  def.infer_type = InferSplit;
  def.reference = SplitReference;
  registry.Register(std::move(def));
}

// ---- strided_slice ----

struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// ONNX Slice: negative begin/end count from the end; begin is clamped to [0, extent] (to
// [0, extent-1] for a negative step) and end to [0, extent] (to [-1, extent-1]).
std::vector<SliceAxis> PlanSlice(const Shape& shape, const Attrs& attrs) {
  const std::vector<int64_t>& begin = attrs.GetInts("begin");
  const std::vector<int64_t>& end = attrs.GetInts("end");
  const std::vector<int64_t>& strides = attrs.GetInts("strides");
  std::vector<int64_t> axes = attrs.GetInts("axes");
  if (end.size() != begin.size() || strides.size() != begin.size()) {
    throw Error(fmt::format("begin {}, end {} and strides {} must have one length",
                            ListToString(begin), ListToString(end), ListToString(strides)));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < begin.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  } else if (axes.size() != begin.size()) {
    throw Error(fmt::format("axes {} must have one entry per entry of begin {}", ListToString(axes),
                            ListToString(begin)));
  }
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<SliceAxis> plan;
  for (int64_t extent : shape) plan.push_back(SliceAxis{0, 1, extent});
  std::vector<int64_t> normalized = NormalizeAxes(axes, rank, "axes");
  for (size_t i = 0; i < normalized.size(); ++i) {
    int64_t extent = shape[static_cast<size_t>(normalized[i])];
    int64_t step = strides[i];
    if (step == 0)
      throw Error(fmt::format("strides {} has a 0 at position {} (a step must be non-zero)",
                              ListToString(strides), i));
    if (extent == 0) {
      plan[static_cast<size_t>(normalized[i])] = SliceAxis{0, step, 0};
      continue;
    }
    int64_t first = begin[i] < 0 ? begin[i] + extent : begin[i];
    int64_t last = end[i] < 0 ? end[i] + extent : end[i];
    int64_t count;  // written to avoid overflow for steps near the int64 limits
    if (step > 0) {
      first = std::clamp<int64_t>(first, 0, extent);
      last = std::clamp<int64_t>(last, 0, extent);
      count = last > first ? 1 + (last - first - 1) / step : 0;
    } else {
      first = std::clamp<int64_t>(first, 0, extent - 1);
      last = std::clamp<int64_t>(last, -1, extent - 1);
      int64_t magnitude =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      count = first > last ? 1 + (first - last - 1) / magnitude : 0;
    }
    plan[static_cast<size_t>(normalized[i])] = SliceAxis{first, step, count};
  }
  return plan;
}

void RegisterStridedSlice(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "strided_slice",
      "ONNX Slice: along each listed axis take begin, begin+stride, ... up to (excluding) end. "
      "Negative begin/end count from the end and are clamped to the axis; strides may be "
      "negative but not 0.",
      {
          {"begin", AttrKind::kInts, std::nullopt, "first index per sliced axis"},
          {"end", AttrKind::kInts, std::nullopt, "end index (exclusive) per sliced axis"},
          {"strides", AttrKind::kInts, std::nullopt, "step per sliced axis"},
          {"axes", AttrKind::kInts, AttrValue(std::vector<int64_t>{}),
           "sliced axes ([] = 0..len(begin)-1)"},
      },
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        Shape shape;
        for (const SliceAxis& axis : PlanSlice(x.shape, attrs)) shape.push_back(axis.count);
        // A slice keeps what each axis means: its result keeps the operand's layout (the
        // channels of an NHWC convolution padded by PackConvWeights, sliced back).
        return TensorType{shape, x.dtype, x.layout};
      },
      [](const std::vector<Tensor>& inputs, const Attrs& attrs,
         const Type& output) -> std::vector<Tensor> {
        const Tensor& x = inputs.at(0);
        std::vector<SliceAxis> plan = PlanSlice(x.shape(), attrs);
        std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
        Tensor out(output.tensor());
        ForEachIndex(out.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
          int64_t offset = 0;
          for (size_t k = 0; k < index.size(); ++k) {
            offset += (plan[k].start + index[k] * plan[k].step) * in_strides[k];
          }
          CopyElement(x, offset, out, flat);
        });
        return {out};
      });
}

// ---- pad ----

enum class PadMode { kConstant, kEdge, kReflect };

PadMode CheckPad(const Shape& shape, const Attrs& attrs) {
  const std::vector<int64_t>& pads = attrs.GetInts("pad_width");
  size_t rank = shape.size();
  if (pads.size() != 2 * rank) {
    throw Error(
        fmt::format("pad_width {} must have 2*rank = {} values (all begins, then all "
                    "ends) for an input of shape {}",
                    ListToString(pads), 2 * rank, ShapeToString(shape)));
  }
  for (int64_t p : pads) {
    if (p < 0) throw Error(fmt::format("pad_width {} has a negative pad", ListToString(pads)));
  }
  const std::string& mode = attrs.GetString("mode");
  PadMode kind;
  if (mode == "constant") {
    kind = PadMode::kConstant;
  } else if (mode == "edge") {
    kind = PadMode::kEdge;
  } else if (mode == "reflect") {
    kind = PadMode::kReflect;
  } else {
    throw Error(
        fmt::format("mode \"{}\" is unknown (expected \"constant\", \"edge\" or "
                    "\"reflect\")",
                    mode));
  }
  for (size_t i = 0; i < rank; ++i) {
    int64_t before = pads[i];
    int64_t after = pads[i + rank];
    if (kind == PadMode::kEdge && shape[i] == 0 && (before > 0 || after > 0)) {
      throw Error(fmt::format("edge padding of axis {} of shape {} needs a non-empty axis", i,
                              ShapeToString(shape)));
    }
    if (kind == PadMode::kReflect && (before >= shape[i] || after >= shape[i]) &&
        (before > 0 || after > 0)) {
      throw Error(
          fmt::format("reflect padding of axis {} of shape {} needs pads smaller than "
                      "the extent {} but pad_width has {} and {}",
                      i, ShapeToString(shape), shape[i], before, after));
    }
  }
  return kind;
}

std::vector<Tensor> PadReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                 const Type& output) {
  const Tensor& x = inputs.at(0);
  PadMode mode = CheckPad(x.shape(), attrs);
  const std::vector<int64_t>& pads = attrs.GetInts("pad_width");
  double value = attrs.GetFloat("pad_value");
  std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  Tensor out(output.tensor());
  ForEachIndex(out.shape(), [&](const std::vector<int64_t>& index, int64_t flat) {
    int64_t offset = 0;
    for (size_t k = 0; k < index.size(); ++k) {
      int64_t extent = x.shape()[k];
      int64_t i = index[k] - pads[k];
      if (i < 0 || i >= extent) {
        if (mode == PadMode::kConstant) {
          out.SetDouble(flat, value);
          return;
        }
        if (mode == PadMode::kEdge) {
          i = i < 0 ? 0 : extent - 1;
        } else {
          i = i < 0 ? -i : 2 * (extent - 1) - i;
        }
      }
      offset += i * in_strides[k];
    }
    CopyElement(x, offset, out, flat);
  });
  return {out};
}

void RegisterPad(OpRegistry& registry) {
  RegisterUnaryShapeOp(
      registry, "pad",
      "Pads every axis by pad_width (all begins, then all ends; non-negative). mode \"constant\" "
      "fills pad_value, \"edge\" repeats the border element, \"reflect\" mirrors without "
      "repeating the border (pads must be smaller than the extent).",
      {
          {"pad_width", AttrKind::kInts, std::nullopt, "2*rank pads: all begins, then all ends"},
          {"pad_value", AttrKind::kFloat, AttrValue(0.0), "fill value of constant mode"},
          {"mode", AttrKind::kString, AttrValue(std::string("constant")),
           "\"constant\", \"edge\" or \"reflect\""},
      },
      [](const std::vector<Type>& inputs, const Attrs& attrs) -> Type {
        const TensorType& x = TensorOperand(inputs, 0, "x");
        CheckPad(x.shape, attrs);
        const std::vector<int64_t>& pads = attrs.GetInts("pad_width");
        Shape shape = x.shape;
        for (size_t i = 0; i < shape.size(); ++i) {
          std::string what = fmt::format("the padded extent of axis {} (pad_width)", i);
          shape[i] = CheckedAdd(CheckedAdd(shape[i], pads[i], what), pads[i + shape.size()], what);
        }
        return TensorType{shape, x.dtype, ""};
      },
      PadReference);
}

}  // namespace

void RegisterShapeOps(OpRegistry& registry) {
  RegisterReshape(registry);
  RegisterTranspose(registry);
  RegisterFlatten(registry);
  RegisterConcat(registry);
  RegisterSplit(registry);
  RegisterStridedSlice(registry);
  RegisterSqueeze(registry);
  RegisterExpandDims(registry);
  RegisterPad(registry);
}

}  // namespace tandem::ir::ops
