// The builder: compiles candidate modules into executables, several at a time.
//
// Shared by every tuning pass through the tuning session. A failure to build one candidate
// (an ir::Error or any exception from legalization or code generation) is that candidate's
// BuildOutput::error; the other candidates are unaffected.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/executable.h"
#include "ir/graph.h"

namespace tandem::tuning {

struct BuildInput {
  ir::IRModule module;
  backends::BuildOptions options;
};

struct BuildOutput {
  std::shared_ptr<backends::Executable> executable;  // null when the build failed
  std::string error;                                 // why it failed ("" on success)
  double seconds = 0;                                // wall time of this build
  bool ok() const { return executable != nullptr; }
};

class Builder {
 public:
  virtual ~Builder() = default;
  // One output per input, in order.
  virtual std::vector<BuildOutput> Build(const std::vector<BuildInput>& inputs) = 0;
};

// Builds on `num_workers` threads of this process (0: one per core). Outputs are in input
// order whatever order the builds finish in.
class LocalBuilder : public Builder {
 public:
  explicit LocalBuilder(int num_workers = 0);
  std::vector<BuildOutput> Build(const std::vector<BuildInput>& inputs) override;

 private:
  int num_workers_;
};

}  // namespace tandem::tuning
