// Exporting a built model as a deployable artifact (backends/runtime/artifact.h): what
// `tandem export` does. The kernels are compiled ahead of time for the build's target (LLVM
// object emission, no JIT), the constants and the execution plan go into the payload, and the
// system C compiler driver (`cc`) links both into one shared library, to which a checksum
// trailer is appended. libtandem_runtime loads the result with no compiler in the process.
#pragma once

#include <string>

#include "backends/runtime/executable.h"
#include "ir/graph.h"

namespace tandem::backends {

// What the manifest says beside what the build knows (target, features, codegen version).
struct ExportOptions {
  std::string path;  // the shared library (or, with `object`, the object file) to write
  // A relocatable object to link into a program instead of a shared library: it defines
  // `tandem_linked_model tandem_artifact_<linked_name>` (include/tandem/runtime.h) and its
  // kernels as tandem_kernel_<linked_name>_<kernel>, so that several models link side by side.
  bool object = false;
  std::string linked_name;  // a C identifier
  std::string pipeline;
  std::string trace_hash;
  std::string model_hash;
  std::string target;  // the target text, for the manifest
  int threads = 0;
};

// What ExportArtifact wrote.
struct ExportSummary {
  int64_t file_bytes = 0;
  int64_t constant_bytes = 0;
  int64_t kernel_calls = 0;
  int64_t kernels = 0;
  std::string required_features;  // comma-separated
};

// Exports `module` (a pipeline's result, as Build takes it) built with `options`. Steps:
//   1. legalized and planned as Build does (LegalizeForBuild, PlanExecution);
//   2. the kernels compiled into an object under symbols "tandem_kernel_<name>";
//   3. the payload encoded and written as an assembler source that includes it (.incbin);
//   4. both linked by `cc -shared`, and the checksum trailer appended (with `object`: linked by
//      `cc -r` into one relocatable object with the linked-model table, and no trailer).
// Subgraphs placed on oneDNN travel as module text and are compiled by oneDNN when the artifact
// loads, under the oneDNN instruction set of the build's target (recorded in the manifest).
// Error when the module calls another external backend, when no C compiler driver is found, when
// linking or writing fails (with the linker's output), or when `linked_name` is not a C
// identifier.
ExportSummary ExportArtifact(const ir::IRModule& module, const BuildOptions& options,
                             const ExportOptions& export_options);

}  // namespace tandem::backends
