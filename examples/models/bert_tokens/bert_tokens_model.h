// The token-input BERT example (examples/models/bert_tokens/): a small BERT-style encoder in
// ONNX that takes `input_ids` and `attention_mask` (int64, dynamic axes "batch" and "sequence"),
// as a model hub exports one, built deterministically in C++ through the ONNX protobuf API.
//
// The graph is what exporters emit: the word embedding is a Gather of the run-time input_ids;
// the position embedding a Gather of Range(0, Shape(input_ids)[1]); the attention mask becomes
// an additive mask through Cast, Sub and Mul in the first layer and through Equal and Where in
// the second; each of the two layers is multi-head self-attention (MatMul, Reshape, Transpose,
// Softmax) and a GELU (Erf) feed-forward block, each followed by LayerNormalization.
//
// BertTokensReference computes the same encoder from the model's initializers with plain loops
// in double, independently of Tandem's importer and ops: the cross-check of the stored outputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace tandem::examples {

struct BertTokensConfig {
  int64_t vocabulary = 1000;
  int64_t hidden = 64;
  int64_t heads = 2;
  int64_t feed_forward = 128;
  int64_t layers = 2;
  int64_t max_positions = 128;
};

// The model (opset 17, inputs input_ids and attention_mask [batch, sequence], output
// last_hidden_state [batch, sequence, hidden]); the same bytes on every run and machine.
onnx::ModelProto BuildBertTokensModel(const BertTokensConfig& config = {});

// Inputs for one batch of `sequence` tokens: input_ids drawn from [0, vocabulary) and an
// attention mask with the last quarter of the positions padding (0). Deterministic in `seed`.
std::vector<ir::Tensor> BertTokensInputs(int64_t sequence, uint64_t seed,
                                         const BertTokensConfig& config = {});

// last_hidden_state computed from the initializers of `model` with plain loops in double (float
// result). Throws ir::Error for an input id outside [0, vocabulary).
ir::Tensor BertTokensReference(const onnx::ModelProto& model, const ir::Tensor& input_ids,
                               const ir::Tensor& attention_mask,
                               const BertTokensConfig& config = {});

}  // namespace tandem::examples
