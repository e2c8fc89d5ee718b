// Target selection, the optimization pipeline, machine code emission and the ORC JIT behind
// backends/llvm/codegen.h (internal header: it exposes LLVM types).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/llvm/codegen.h"

namespace llvm::orc {
class LLJIT;
}  // namespace llvm::orc

namespace tandem::backends {

// A resolved code generation target.
struct TargetSpec {
  std::string triple;
  std::string cpu;       // never "host": the host's CPU name is filled in
  std::string features;  // comma-separated "+feature"/"-feature" list
};

// Initializes LLVM's native target once per process (thread-safe).
void InitializeLlvm();

// The target `options` describe: the process triple, the host CPU and its features when
// options.cpu is "host", plus options.features. Error on an unknown CPU or feature.
TargetSpec ResolveTarget(const CodegenOptions& options);

// Those of `features` (LLVM x86 feature names: "avx2", "avx512f" ...) that the target `options`
// describe enables, its CPU's implied features included. Errors as ResolveTarget.
std::vector<std::string> EnabledTargetFeatures(const CodegenOptions& options,
                                               const std::vector<std::string>& features);

// A target machine for `target` (PIC, fp-contract "fast" for fmuladd, the given -O level).
std::unique_ptr<llvm::TargetMachine> CreateTargetMachine(const TargetSpec& target, int opt_level);

// Runs the new-PassManager default pipeline of `opt_level` (0..3) on `module`.
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine, int opt_level);

// Assembly text or an ELF object for `module`.
std::string EmitMachineCode(llvm::Module& module, llvm::TargetMachine& machine, bool assembly);

// An ORC LLJIT instance for one compiled module: tandem_parallel_for, aligned_alloc and free
// are defined as absolute symbols; other symbols (libm) resolve in the current process.
class JitEngine {
 public:
  static std::unique_ptr<JitEngine> Create(const TargetSpec& target, int opt_level);
  ~JitEngine();

  // Hands a relocatable object file (in memory; copied) to the JIT.
  void AddObject(const std::string& object);
  // The address of a defined function; Error when it is missing or fails to compile.
  void* Lookup(const std::string& name);

 private:
  JitEngine() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace tandem::backends
