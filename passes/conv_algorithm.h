// The convolution algorithm of 2-d convolutions: direct, or Winograd F(2x2,3x3) / F(4x4,3x3)
// written as graph ops (ir/ops/winograd_ops.cc) that FoldConstant, FuseOps, Legalize and kernel
// search treat like any other op. TuneConvAlgorithm chooses among these by measurement; this
// file holds the rewrite and the text form of a choice, which the tuning trace records and
// replays.
//
// A conv2d is eligible when it has NCHW data and OIHW weight (or NHWC data and HWIO weight, as
// ConvertLayout writes them; then the transforms read and write NHWC), a 3x3 kernel, stride 1,
// dilation 1, groups 1, f32/f64 operands, and no external-backend annotation (padding and batch
// are free). It becomes
//   winograd_output_transform(batch_matmul(winograd_input_transform(data),
//                                          winograd_weight_transform(weight)))
// with the last node keeping the convolution's name and annotations; a constant weight is
// transformed at rewrite time (the constant the folded weight transform would give), so the
// transform never runs at inference time whatever passes follow.
//
// Choice text: "direct", "winograd_2x2" or "winograd_4x4" for every eligible convolution of
// the function, or per convolution "winograd_4x4:conv_a,conv_b;winograd_2x2:conv_c" (the
// convolutions not listed stay direct).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tandem::passes {

// True when node `id` of `function` is a conv2d the Winograd rewrite applies to.
bool IsWinogradEligible(const ir::GraphFunction& function, ir::ValueId id);

// Names of the eligible convolutions of `function`, in node order.
std::vector<std::string> EligibleConvolutions(const ir::GraphFunction& function);

// Rewrites the convolutions named in `tiles` (name -> Winograd tile, 2 or 4) into the Winograd
// chain. A named node that is missing or not eligible is an ir::Error naming it.
ir::GraphFunction RewriteConvAlgorithms(const ir::GraphFunction& function,
                                        const std::map<std::string, int64_t>& tiles);

// The per-convolution tiles a choice text asks for on `function` (empty for "direct").
// Malformed text, an unknown algorithm or a name that is not an eligible convolution is an
// ir::Error.
std::map<std::string, int64_t> ParseConvAlgorithmText(const std::string& text,
                                                      const ir::GraphFunction& function);

// The per-convolution choice text of `tiles` ("direct" when empty), names in sorted order.
std::string ConvAlgorithmText(const std::map<std::string, int64_t>& tiles);

// `module` with the choice `text` applied to its graph function `function_name` (which must not
// be an extern function).
ir::IRModule ApplyConvAlgorithm(const ir::IRModule& module, const std::string& function_name,
                                const std::string& text);

}  // namespace tandem::passes
