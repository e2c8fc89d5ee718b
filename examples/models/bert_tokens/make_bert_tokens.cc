// Writes examples/models/bert_tokens: model.onnx (BuildBertTokensModel) and, for sequence lengths
// 16, 77 and 128, test_data_seq<length>/ with input_0.pb (input_ids), input_1.pb
// (attention_mask) and output_0.pb (last_hidden_state), and bad_input_id/ (input ids with one
// past the vocabulary, no outputs). The outputs are Tandem's reference
// interpreter on the model imported at that length; the program refuses to write them unless
// they match the independent BertTokensReference.
//
// A development program, like scripts/make_tiny_cnn.py: the files it writes are committed, and
// tests/pipelines/bert_tokens_test.cc checks that this code still builds the committed model.
//   build/tests/tandem_make_bert_tokens examples/models/bert_tokens
// With HIDDEN HEADS FEED_FORWARD LAYERS it writes a model of that size instead (for benchmarks:
// 768 12 3072 2 is BERT-base's width, two layers).
#include <fmt/format.h>

#include <filesystem>
#include <tuple>

#include "examples/models/bert_tokens/bert_tokens_model.h"
#include "examples/models/token_test_data.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace tandem;
  if (argc != 2 && argc != 6) {
    fmt::print(stderr, "usage: {} OUTPUT_DIRECTORY [HIDDEN HEADS FEED_FORWARD LAYERS]\n", argv[0]);
    return 2;
  }
  try {
    fs::path out = argv[1];
    // Another size (a benchmark's model, not committed): the defaults are the committed one's.
    examples::BertTokensConfig config;
    if (argc == 6) {
      std::tie(config.hidden, config.heads, config.feed_forward, config.layers) =
          examples::SizeArguments(argv + 2);
    }
    if (!examples::WriteTokenTestData("bert_tokens", "last_hidden_state", config,
                                      examples::BuildBertTokensModel, examples::BertTokensInputs,
                                      examples::BertTokensReference, {16, 77, 128}, out)) {
      return 1;
    }
    // An input id one past the vocabulary: running the model must fail naming it.
    fs::path bad = out / "bad_input_id";
    fs::create_directories(bad);
    frontend::WriteTensorProtoFile(ir::Tensor::FromInt64s({1, 4}, {5, 1000, 7, 3}),
                                   (bad / "input_0.pb").string(), "input_ids");
    frontend::WriteTensorProtoFile(ir::Tensor::FromInt64s({1, 4}, {1, 1, 1, 1}),
                                   (bad / "input_1.pb").string(), "attention_mask");
  } catch (const ir::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
