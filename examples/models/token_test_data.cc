#include "examples/models/token_test_data.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <string>

#include "backends/reference/interpreter.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"

namespace tandem::examples {

std::tuple<int64_t, int64_t, int64_t, int64_t> SizeArguments(char** args) {
  return {std::stoll(args[0]), std::stoll(args[1]), std::stoll(args[2]), std::stoll(args[3])};
}

bool WriteTokenTestData(const TokenTestDataSource& source, const std::vector<int64_t>& lengths,
                        const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  // Everything is checked before anything is written.
  std::map<int64_t, std::vector<ir::Tensor>> tensors;  // per length: the inputs, the output
  for (int64_t length : lengths) {
    std::vector<ir::Tensor> inputs = source.inputs(length);
    frontend::OnnxImportOptions options;
    options.input_shapes = {{"input_ids", {1, length}}, {"attention_mask", {1, length}}};
    ir::IRModule module = frontend::ImportOnnxModel(source.bytes, source.name, options);
    ir::Tensor output = backends::RunReference(module, inputs).at(0);
    double error = ir::RelativeError(output, source.reference(inputs[0], inputs[1]));
    if (!(error < 1e-5)) {
      fmt::print(stderr,
                 "length {}: the reference interpreter differs from the independent "
                 "computation (relative error {})\n",
                 length, error);
      return false;
    }
    fmt::print("length {}: relative error against the independent computation {:.3g}\n", length,
               error);
    tensors[length] = {inputs[0], inputs[1], output};
  }
  fs::create_directories(out);
  std::ofstream(out / "model.onnx", std::ios::binary) << source.bytes;
  for (const auto& [length, t] : tensors) {
    fs::path dir = out / fmt::format("test_data_seq{}", length);
    fs::create_directories(dir);
    frontend::WriteTensorProtoFile(t[0], (dir / "input_0.pb").string(), "input_ids");
    frontend::WriteTensorProtoFile(t[1], (dir / "input_1.pb").string(), "attention_mask");
    frontend::WriteTensorProtoFile(t[2], (dir / "output_0.pb").string(), source.output);
  }
  return true;
}

}  // namespace tandem::examples
