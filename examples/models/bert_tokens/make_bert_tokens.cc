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
#include <fstream>

#include "backends/reference/interpreter.h"
#include "examples/models/bert_tokens/bert_tokens_model.h"
#include "frontend/onnx_importer.h"
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
    fs::create_directories(out);
    // Another size (a benchmark's model, not committed): the defaults are the committed one's.
    examples::BertTokensConfig config;
    if (argc == 6) {
      config.hidden = std::stoll(argv[2]);
      config.heads = std::stoll(argv[3]);
      config.feed_forward = std::stoll(argv[4]);
      config.layers = std::stoll(argv[5]);
    }
    onnx::ModelProto model = examples::BuildBertTokensModel(config);
    std::string bytes = model.SerializeAsString();
    std::ofstream(out / "model.onnx", std::ios::binary) << bytes;
    for (int64_t length : {16, 77, 128}) {
      std::vector<ir::Tensor> inputs =
          examples::BertTokensInputs(length, static_cast<uint64_t>(length), config);
      frontend::OnnxImportOptions options;
      options.input_shapes = {{"input_ids", {1, length}}, {"attention_mask", {1, length}}};
      ir::IRModule module = frontend::ImportOnnxModel(bytes, "bert_tokens", options);
      ir::Tensor output = backends::RunReference(module, inputs).at(0);
      ir::Tensor independent = examples::BertTokensReference(model, inputs[0], inputs[1], config);
      double error = ir::RelativeError(output, independent);
      if (!(error < 1e-5)) {
        fmt::print(stderr,
                   "length {}: the reference interpreter differs from the independent "
                   "computation (relative error {})\n",
                   length, error);
        return 1;
      }
      fs::path dir = out / fmt::format("test_data_seq{}", length);
      fs::create_directories(dir);
      frontend::WriteTensorProtoFile(inputs[0], (dir / "input_0.pb").string(), "input_ids");
      frontend::WriteTensorProtoFile(inputs[1], (dir / "input_1.pb").string(), "attention_mask");
      frontend::WriteTensorProtoFile(output, (dir / "output_0.pb").string(), "last_hidden_state");
      fmt::print("length {}: relative error against the independent computation {:.3g}\n", length,
                 error);
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
