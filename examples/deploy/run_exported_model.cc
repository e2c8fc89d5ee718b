// Runs a model exported by `tandem export` on raw input files and writes raw output files:
//   run_exported_model model.so THREADS input_0.bin ... -- output_0.bin ...
// Each file holds one tensor's bytes, dense and row-major, as the model's info describes. Built
// with TANDEM_LINKED_MODEL_SYMBOL (a model exported with --format object, linked in), it runs
// that model and takes "-" in place of model.so.
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <tandem/runtime.hpp>

#ifdef TANDEM_LINKED_MODEL_SYMBOL
extern const tandem_linked_model TANDEM_LINKED_MODEL_SYMBOL;
#endif

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: run_exported_model model.so THREADS input.bin ... -- output.bin ...\n";
    return 2;
  }
  try {
#ifdef TANDEM_LINKED_MODEL_SYMBOL
    tandem::Model model(TANDEM_LINKED_MODEL_SYMBOL, std::stoi(argv[2]));
#else
    tandem::Model model(argv[1], std::stoi(argv[2]));
#endif
    std::vector<std::string> in_files, out_files;
    bool outputs = false;
    for (int a = 3; a < argc; ++a) {
      std::string arg = argv[a];
      if (arg == "--")
        outputs = true;
      else
        (outputs ? out_files : in_files).push_back(arg);
    }
    if (in_files.size() != model.inputs().size() || out_files.size() != model.outputs().size()) {
      std::cerr << "the model takes " << model.inputs().size() << " inputs and gives "
                << model.outputs().size() << " outputs\n";
      return 2;
    }
    std::vector<std::vector<char>> inputs, results;
    for (size_t i = 0; i < in_files.size(); ++i) {
      std::ifstream file(in_files[i], std::ios::binary);
      inputs.emplace_back(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
      if (inputs.back().size() != model.inputs()[i].bytes) {
        std::cerr << in_files[i] << ": expected " << model.inputs()[i].bytes << " bytes\n";
        return 2;
      }
    }
    for (const tandem_tensor_info& info : model.outputs()) results.emplace_back(info.bytes);
    std::vector<const void*> in;
    std::vector<void*> out;
    for (auto& buffer : inputs) in.push_back(buffer.data());
    for (auto& buffer : results) out.push_back(buffer.data());
    model.Run(in, out);
    for (size_t o = 0; o < out_files.size(); ++o) {
      std::ofstream(out_files[o], std::ios::binary).write(results[o].data(), results[o].size());
      std::cout << "output " << o << " (" << model.outputs()[o].name << "): " << results[o].size()
                << " bytes -> " << out_files[o] << "\n";
    }
    return 0;
  } catch (const tandem::RuntimeError& error) {
    std::cerr << "error " << error.status() << ": " << error.what() << "\n";
    return 1;
  }
}
