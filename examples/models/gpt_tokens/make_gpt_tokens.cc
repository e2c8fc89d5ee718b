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
#include <fstream>
#include <map>
#include <string>

#include "backends/reference/interpreter.h"
#include "examples/models/gpt_tokens/gpt_tokens_model.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
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
      config.hidden = std::stoll(argv[2]);
      config.heads = std::stoll(argv[3]);
      config.inner = std::stoll(argv[4]);
      config.layers = std::stoll(argv[5]);
    }
    onnx::ModelProto model = examples::BuildGptTokensModel(config);
    std::string bytes = model.SerializeAsString();
    // Everything is checked before anything is written.
    std::map<int64_t, std::vector<ir::Tensor>> tensors;  // per length: the inputs, the output
    for (int64_t length : {16, 77, 128}) {
      std::vector<ir::Tensor> inputs =
          examples::GptTokensInputs(length, static_cast<uint64_t>(length), config);
      frontend::OnnxImportOptions options;
      options.input_shapes = {{"input_ids", {1, length}}, {"attention_mask", {1, length}}};
      ir::IRModule module = frontend::ImportOnnxModel(bytes, "gpt_tokens", options);
      ir::Tensor output = backends::RunReference(module, inputs).at(0);
      ir::Tensor independent = examples::GptTokensReference(model, inputs[0], inputs[1], config);
      double error = ir::RelativeError(output, independent);
      if (!(error < 1e-5)) {
        fmt::print(stderr,
                   "length {}: the reference interpreter differs from the independent "
                   "computation (relative error {})\n",
                   length, error);
        return 1;
      }
      fmt::print("length {}: relative error against the independent computation {:.3g}\n", length,
                 error);
      tensors[length] = {inputs[0], inputs[1], output};
    }
    fs::create_directories(out);
    std::ofstream(out / "model.onnx", std::ios::binary) << bytes;
    for (const auto& [length, t] : tensors) {
      fs::path dir = out / fmt::format("test_data_seq{}", length);
      fs::create_directories(dir);
      frontend::WriteTensorProtoFile(t[0], (dir / "input_0.pb").string(), "input_ids");
      frontend::WriteTensorProtoFile(t[1], (dir / "input_1.pb").string(), "attention_mask");
      frontend::WriteTensorProtoFile(t[2], (dir / "output_0.pb").string(), "logits");
    }
  } catch (const ir::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
