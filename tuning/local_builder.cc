// LocalBuilder: backends::Build on a few threads of this process.
//
// Concurrent builds are safe: each build creates its own LLVMContext, TargetMachine and LLJIT
// (backends/llvm/codegen.cc, jit.cc), LLVM's process-wide target registration runs once under
// std::call_once (InitializeLlvm), and the graph and kernel IR a build reads is immutable.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <system_error>
#include <thread>

#include "ir/error.h"
#include "tuning/builder.h"

namespace tandem::tuning {

namespace {

BuildOutput BuildOne(const BuildInput& input) {
  BuildOutput output;
  auto start = std::chrono::steady_clock::now();
  try {
    output.executable = backends::Build(input.module, input.options);
  } catch (const std::exception& e) {
    output.error = fmt::format("build failed: {}", e.what());
  } catch (...) {
    output.error = "build failed: unknown exception";
  }
  output.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!output.executable && output.error.empty()) output.error = "build failed: no executable";
  return output;
}

}  // namespace

LocalBuilder::LocalBuilder(int num_workers) : num_workers_(num_workers) {
  if (num_workers < 0) {
    throw ir::Error(
        fmt::format("LocalBuilder: the number of workers must be >= 0 but is {}", num_workers));
  }
}

std::vector<BuildOutput> LocalBuilder::Build(const std::vector<BuildInput>& inputs) {
  std::vector<BuildOutput> outputs(inputs.size());
  if (inputs.empty()) return outputs;
  size_t workers = num_workers_ > 0 ? static_cast<size_t>(num_workers_)
                                    : std::max<size_t>(1, std::thread::hardware_concurrency());
  workers = std::min(workers, inputs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < inputs.size(); i = next.fetch_add(1)) {
      outputs[i] = BuildOne(inputs[i]);
    }
  };
  // The calling thread is one of the workers; if a thread cannot be started, the ones that
  // did start (and the caller) take its share.
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  try {
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  } catch (const std::system_error&) {
  }
  work();
  for (std::thread& thread : threads) thread.join();
  return outputs;
}

}  // namespace tandem::tuning
