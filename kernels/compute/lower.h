// Lowering of graph op calls into kernel functions (compute definitions).
//
// Every op of docs/ops.md has a compute definition that turns one call into one or a few
// Blocks with explicit spatial and reduction iterators (see compute_builder.h for the exact
// shape of the generated IR). Notable choices:
//   - convolutions and max/avg pooling whose window reaches outside the input (padding, or a
//     ceil_mode window past the end) first copy the input into a padded intermediate in a block
//     named "pad" (select(in-bounds, load, pad value)); without padding there is no pad block;
//   - conv2d_transpose is dilate + pad + convolution: the "pad" block scatters the input onto a
//     strided grid with the full-convolution border, and "conv2d_transpose" convolves it with
//     the spatially flipped kernel (a plain reduction without conditions);
//   - multi-block ops (mean, avg pooling, layer_norm, softmax) keep their partial results in
//     root-allocated intermediates;
//   - reductions accumulate in the output dtype; max starts from -inf (the lowest value for
//     integer types).
#pragma once

#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/graph.h"
#include "ir/kernel/stmt.h"
#include "ir/type.h"

namespace tandem::kernels {

// Lowers one op call (normalized attrs as stored in a graph node) into a kernel function named
// `name`. Its parameters are one buffer per operand (named after the op's operands: "data",
// "weight", "a", "b", "x", ...) followed by the outputs ("output", or "output0", "output1", ...
// for a tuple result such as split's). The attributes are checked and the result type is
// re-inferred: an `output` that does not match, an unknown op or an attribute combination the
// compute cannot lower is an ir::Error naming the op and the reason.
ir::KernelFunction LowerOpCall(const std::string& name, const std::string& op,
                               const ir::Attrs& attrs, const std::vector<ir::TensorType>& inputs,
                               const ir::Type& output);

// Lowers a whole graph function of op calls (a fused group: e.g. conv2d + add + relu) into ONE
// kernel function with several blocks: its parameters become the kernel's input buffers (named
// after the parameter nodes), its result the output buffer(s) (flattened like
// GraphFunction::OutputTensorTypes), intermediates become root-allocated buffers. Constants
// inside the function are an Error (fusion hoists weights out as parameters); tuple and
// tuple_get_item (of split) are supported. A result that is a parameter or that appears twice
// is written by a "copy" block.
ir::KernelFunction LowerGraphFunction(const ir::GraphFunction& function, const std::string& name);

// True when the op has a compute definition.
bool HasCompute(const std::string& op);

}  // namespace tandem::kernels
