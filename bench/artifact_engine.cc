// tandem_artifact_engine: an exported model (tandem export) run through libtandem_runtime alone,
// as an external contender of `tandem bench --external` (the line protocol of
// bench/external_contender.h), so that the artifact and the JIT build are timed in the same
// turns. It links nothing of the compiler.
//
//   tandem_artifact_engine MODEL.so [THREADS]
//
// On standard error it reports the load time (tandem_model_load: reading, checking, opening the
// library, compiling its oneDNN subgraphs) and the file size. Inputs are deterministic
// pseudo-random values in [-1, 1) (zeros for integer and boolean inputs).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "tandem/runtime.hpp"

namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: tandem_artifact_engine MODEL.so [THREADS]\n";
    return 2;
  }
  try {
    int threads = argc == 3 ? std::stoi(argv[2]) : 0;
    auto start = std::chrono::steady_clock::now();
    tandem::Model model(argv[1], threads);
    double load = Seconds(start);
    struct stat file {};
    stat(argv[1], &file);
    std::cerr << "tandem_artifact_engine: loaded " << argv[1] << " ("
              << static_cast<double>(file.st_size) / (1 << 20) << " MiB) in " << load * 1e3
              << " ms\n";
    std::vector<std::vector<uint8_t>> inputs, outputs;
    uint64_t state = 42;
    for (const tandem_tensor_info& info : model.inputs()) {
      inputs.emplace_back(info.bytes);
      if (info.dtype != TANDEM_F32) continue;
      auto* values = reinterpret_cast<float*>(inputs.back().data());
      for (size_t k = 0; k < info.bytes / sizeof(float); ++k) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        values[k] = static_cast<float>(state >> 40) / static_cast<float>(1 << 23) - 1.0f;
      }
    }
    for (const tandem_tensor_info& info : model.outputs()) outputs.emplace_back(info.bytes);
    std::vector<const void*> in;
    std::vector<void*> out;
    for (auto& buffer : inputs) in.push_back(buffer.data());
    for (auto& buffer : outputs) out.push_back(buffer.data());
    for (int warmup = 0; warmup < 5; ++warmup) model.Run(in, out);
    std::cout << "ready" << std::endl;
    std::string command;
    while (std::cin >> command && command == "run") {
      int runs = 0;
      std::cin >> runs;
      std::string line;
      for (int r = 0; r < runs; ++r) {
        auto call = std::chrono::steady_clock::now();
        model.Run(in, out);
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%.9g", Seconds(call));
        line += (r ? " " : "") + std::string(seconds);
      }
      std::cout << line << std::endl;
    }
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "tandem_artifact_engine: " << error.what() << "\n";
    std::cout << "error: " << error.what() << std::endl;
    return 1;
  }
}
