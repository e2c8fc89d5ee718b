// Writes examples/models/gpt_tokens: model.onnx (BuildGptTokensModel) and, for sequence lengths
// 16, 77 and 128, test_data_seq<length>/ with input_0.pb (input_ids), input_1.pb
// (attention_mask) and output_0.pb (logits). The outputs are Tandem's reference interpreter on
// the model imported at that length; the program refuses to write them unless they match the
// independent GptTokensReference.
//
// A development program, like tandem_make_bert_tokens: the files it writes are committed, and
// tests/pipelines/gpt_tokens_test.cc checks that this code still builds the committed model.
//   build/tests/tandem_make_gpt_tokens examples/models/gpt_tokens
// With HIDDEN HEADS INNER LAYERS it writes a model of that size instead (for benchmarks: 768 12
// 3072 2 is GPT-2 small's width, two layers). With --slices the fused query/key/value projection
// is cut by three Slice nodes instead of one Split (QkvCut::kSlices: the same function), the form
// dynamic builds take (tools/CMakeLists.txt writes it into the build tree for the tandem run
// --dynamic tests).
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <tuple>

#include "examples/models/gpt_tokens/gpt_tokens_model.h"
#include "examples/models/token_test_data.h"
#include "ir/error.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace tandem;
  examples::GptTokensConfig config;
  if (argc > 1 && std::string(argv[1]) == "--slices") {
    config.qkv_cut = examples::QkvCut::kSlices;
    --argc;
    ++argv;
  }
  if (argc != 2 && argc != 6) {
    fmt::print(stderr, "usage: {} [--slices] OUTPUT_DIRECTORY [HIDDEN HEADS INNER LAYERS]\n",
               argv[0]);
    return 2;
  }
  try {
    fs::path out = argv[1];
    // Another size (a benchmark's model, not committed): the defaults are the committed one's.
    if (argc == 6) {
      std::tie(config.hidden, config.heads, config.inner, config.layers) =
          examples::SizeArguments(argv + 2);
    }
    if (!examples::WriteTokenTestData("gpt_tokens", "logits", config, examples::BuildGptTokensModel,
                                      examples::GptTokensInputs, examples::GptTokensReference,
                                      {16, 77, 128}, out)) {
      return 1;
    }
  } catch (const ir::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
