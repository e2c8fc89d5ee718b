// The checked test data of a token example (examples/models/bert_tokens/, gpt_tokens/): the
// development programs that write an example's committed files (make_bert_tokens.cc,
// make_gpt_tokens.cc) share it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "ir/tensor.h"

namespace tandem::examples {

// What a token example's test data is made from.
struct TokenTestDataSource {
  std::string name;    // the model's name at import, e.g. "bert_tokens"
  std::string bytes;   // the serialized model
  std::string output;  // the name of the model's output, e.g. "logits"
  // The inputs (input_ids, attention_mask) for a sequence length.
  std::function<std::vector<ir::Tensor>(int64_t length)> inputs;
  // The independent computation of the output from those inputs.
  std::function<ir::Tensor(const ir::Tensor& ids, const ir::Tensor& mask)> reference;
};

// The four sizes HIDDEN HEADS WIDTH LAYERS a development program takes after its output directory
// (a benchmark's model instead of the committed one), from args[0..3].
std::tuple<int64_t, int64_t, int64_t, int64_t> SizeArguments(char** args);

// For each of `lengths`: runs Tandem's reference interpreter on the model imported at that
// length (input_shapes [1, length]) and compares it with the independent reference, printing the
// relative error. Only when every length matches (relative error below 1e-5) writes
// out/model.onnx and out/test_data_seq<length>/ (input_0.pb, input_1.pb, output_0.pb) and
// returns true; otherwise prints the mismatch to stderr, writes nothing and returns false.
bool WriteTokenTestData(const TokenTestDataSource& source, const std::vector<int64_t>& lengths,
                        const std::filesystem::path& out);

// The same for an example given by its functions at `config`: its model from `build`, the
// inputs at each length from `inputs` (seeded with the length) and the independent `reference`.
template <typename Config>
bool WriteTokenTestData(const std::string& name, const std::string& output, const Config& config,
                        onnx::ModelProto (*build)(const Config&),
                        std::vector<ir::Tensor> (*inputs)(int64_t, uint64_t, const Config&),
                        ir::Tensor (*reference)(const onnx::ModelProto&, const ir::Tensor&,
                                                const ir::Tensor&, const Config&),
                        const std::vector<int64_t>& lengths, const std::filesystem::path& out) {
  onnx::ModelProto model = build(config);
  TokenTestDataSource source{
      name, model.SerializeAsString(), output,
      [&](int64_t length) { return inputs(length, static_cast<uint64_t>(length), config); },
      [&](const ir::Tensor& ids, const ir::Tensor& mask) {
        return reference(model, ids, mask, config);
      }};
  return WriteTokenTestData(source, lengths, out);
}

}  // namespace tandem::examples
