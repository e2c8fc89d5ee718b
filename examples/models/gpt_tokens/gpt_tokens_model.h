// The token-input GPT example (examples/models/gpt_tokens/): a small GPT-2-style decoder in ONNX
// that takes `input_ids` and `attention_mask` (int64, dynamic axes "batch" and "sequence") and
// returns `logits` [batch, sequence, vocabulary], as a model hub exports one, built
// deterministically in C++ through the ONNX protobuf API.
//
// The graph is what exporters emit for GPT-2: the token embedding is a Gather of the run-time
// input_ids, the position embedding a Gather of Range(0, Shape(input_ids)[1]); each pre-norm block
// is LayerNormalization, one fused query/key/value MatMul split three ways (Split with a `split`
// input), multi-head attention under a causal mask taken from a constant lower-triangular bool
// buffer [1, 1, max_positions, max_positions] sliced to the sequence length (its ends from
// Shape -> Gather -> Unsqueeze) and applied with Where(causal, scores, lowest float), plus the
// additive padding mask (1 - attention_mask) * lowest float; then a residual, LayerNormalization,
// an MLP with the tanh GELU ("gelu_new": Pow, Tanh) and a residual. A final LayerNormalization and
// the LM head, a MatMul with the Transpose of the token embedding (tied weights), give the logits.
//
// GptTokensReference computes the same decoder from the model's initializers with plain loops in
// double, independently of Tandem's importer and ops: the cross-check of the stored outputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace tandem::examples {

// How the fused query/key/value projection [B, S, 3 * hidden] is cut into its three parts.
enum class QkvCut {
  kSplit,   // one Split with a `split` input, as torch.onnx exports GPT-2's c_attn(...).split()
  kSlices,  // three Slice nodes along the last axis, as exports of qkv[..., a:b] indexing have
};

struct GptTokensConfig {
  int64_t vocabulary = 500;
  int64_t hidden = 64;
  int64_t heads = 2;
  int64_t inner = 256;  // the MLP's width, 4 * hidden as in GPT-2
  int64_t layers = 2;
  int64_t max_positions = 128;
  QkvCut qkv_cut = QkvCut::kSplit;  // the committed model's; both compute the same function
};

// The model (opset 17, inputs input_ids and attention_mask [batch, sequence], output logits
// [batch, sequence, vocabulary]); the same bytes on every run and machine.
onnx::ModelProto BuildGptTokensModel(const GptTokensConfig& config = {});

// Inputs for one batch of `sequence` tokens: input_ids drawn from [0, vocabulary) and an
// attention mask with the last quarter of the positions padding (0), as a right-padded batch
// has. Deterministic in `seed`.
std::vector<ir::Tensor> GptTokensInputs(int64_t sequence, uint64_t seed,
                                        const GptTokensConfig& config = {});

// logits computed from the initializers of `model` with plain loops in double (float result).
// Throws ir::Error for an input id outside [0, vocabulary).
ir::Tensor GptTokensReference(const onnx::ModelProto& model, const ir::Tensor& input_ids,
                              const ir::Tensor& attention_mask, const GptTokensConfig& config = {});

}  // namespace tandem::examples
