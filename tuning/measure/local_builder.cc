// LocalBuilder: builds on a few threads of this process, each build's code generation isolated in
// a child process (tuning/measure/isolated_build.cc) unless the options say otherwise.
//
// Concurrent builds are safe: each build creates its own LLVMContext, TargetMachine and LLJIT
// (backends/llvm/codegen.cc, jit.cc), LLVM's process-wide target registration runs once under
// std::call_once (InitializeLlvm), and the graph and kernel IR a build reads is immutable.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "ir/error.h"
#include "tuning/measure/builder.h"
#include "tuning/measure/isolated_build.h"

namespace tandem::tuning {

LocalBuilder::LocalBuilder(Options options) : options_(std::move(options)) {
  if (options_.num_workers < 0) {
    throw ir::Error(fmt::format("LocalBuilder: the number of workers must be >= 0 but is {}",
                                options_.num_workers));
  }
  if (!(options_.timeout_seconds > 0)) {
    throw ir::Error(fmt::format("LocalBuilder: the build timeout must be > 0 seconds but is {}",
                                options_.timeout_seconds));
  }
  if (options_.in_child_before_compile && !options_.isolate) {
    throw ir::Error("LocalBuilder: in_child_before_compile needs isolated builds");
  }
}

std::vector<BuildOutput> LocalBuilder::Build(const std::vector<BuildInput>& inputs) {
  std::vector<BuildOutput> outputs(inputs.size());
  if (inputs.empty()) return outputs;
  size_t workers = options_.num_workers > 0
                       ? static_cast<size_t>(options_.num_workers)
                       : std::max<size_t>(1, std::thread::hardware_concurrency());
  workers = std::min(workers, inputs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < inputs.size(); i = next.fetch_add(1)) {
      if (!options_.isolate) {
        outputs[i] = BuildInProcess(inputs[i]);
        continue;
      }
      bool forked = false;
      outputs[i] = BuildIsolated(inputs[i], options_.timeout_seconds,
                                 options_.in_child_before_compile, &forked);
      if (forked) ++child_processes_;
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
