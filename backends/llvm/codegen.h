// LLVM code generation for x86-64 CPUs: kernel IR -> LLVM IR -> machine code (ORC JIT), or an
// object file / assembly for ahead-of-time use.
//
// Generated code computes what backends::RunKernelReference computes, up to the rounding order
// of floating-point operations (a*b+c may be fused into an fma; no reassociation unless
// CodegenOptions::allow_reassociation). Documented differences, all outside the meaning of a
// valid program:
//   - no bounds checks: an access the interpreter rejects as out of bounds is undefined here;
//   - integer division or modulo by zero yields an unspecified value (it never traps);
//   - erf, tanh and sigmoid of f32 (and exp of f32 inside vectorized loops) use Tandem's own
//     vectorizable approximations, with a relative error below 5e-7 (3e-7 for exp) where the
//     result is a normal f32 number (backends/llvm/codegen_math.cc);
//   - a "local" buffer allocated outside a parallel loop and used only inside it is private to
//     each thread, zero-filled once per chunk of iterations rather than once per block instance
//     (loop iterations of a parallel loop must be independent anyway).
//
// Calling convention: each kernel becomes `void name(void** buffers)`, one data pointer per
// kernel parameter in parameter order. Buffers are dense, row-major, 64-byte aligned and must
// not overlap when one of them is written (they are marked noalias).
//
// Code generation, per statement:
//   - serial loops are plain loops; unrolled loops are replicated with the loop variable
//     replaced by constants while the product of the extents of nested replicated loops stays
//     within 64 and the replicated code small (beyond that they are plain loops, left to LLVM's
//     unroller: compile time grows quickly with code size);
//   - vectorized loops are emitted as vector IR of width = extent (loops longer than 64 run in
//     chunks of 64 lanes plus a remainder), in power-of-two pieces (56 lanes: 32 + 16 + 8).
//     Loads and stores whose flat index is affine in the loop variable become vector
//     loads/stores (stride 1), a scalar load and splat (stride 0), a masked load of the span
//     the lanes cover and a shuffle (strides 2 to 4) or gathers/scatters; index arithmetic
//     tracks known multiples, so floordiv/floormod of a tile-aligned vectorized index by the
//     tile size stays uniform/affine (packed layouts). Conditions that differ per lane become
//     masks (masked loads, stores and scatters; a gather reads element 0 of its buffer in
//     inactive lanes; a uniform load reads element 0 when no lane is active), so a lane never
//     touches memory outside its buffer, nor writes memory it would not write in serial order
//     (exception: inactive lanes of a stack array whose whole span is in bounds are read and
//     written back unchanged, which keeps register tiles in registers).
//     Inner loops and blocks are emitted inside the vector code. When the lanes are not provably
//     independent (a store whose address does not move with the lane, a load of a written
//     buffer at another address than its store, a buffer allocated inside the loop) the loop is
//     emitted as a serial loop instead: always correct, slower. The vectors a schedule asks for
//     keep their width (up to 512 bits, or prefer_vector_width when set) even where the target
//     prefers narrower vectors for LLVM's own vectorizers;
//   - parallel loops are outlined into `void body(int64_t begin, int64_t end, void* closure)`
//     and run with tandem_parallel_for (backends/runtime/thread_pool.h); parallel loops nested
//     inside a parallel (or vectorized) loop run serially;
//   - blocks evaluate their iterator values, test the predicate, run init when every reduction
//     iterator is 0, then the body. Allocated buffers are zero-filled when the block starts (as
//     in the interpreter): "local" buffers up to 64 KiB live on the stack of the enclosing
//     function (or outlined parallel body), other allocations are 64-byte aligned heap blocks
//     freed when the block ends;
//   - before all that, a "local" buffer whose accesses all lie under one statement and touch,
//     per iteration of the loops around it, a tile that never overlaps another iteration's
//     tile (a register tile staged by cache_write) is shrunk to the tile and allocated (and
//     zero-filled) at that statement, indexed relative to the tile; with unrolled tile loops its
//     indices are constants and LLVM keeps the tile in registers across the reduction loops.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"
#include "ir/target.h"
#include "ir/tensor.h"
#include "kernels/default_schedule.h"

namespace tandem::backends {

// The version of the code Tandem generates. Bumped whenever the machine code for a given kernel
// and target can change (lowering, default schedules, code generation, LLVM options): tuning
// records are keyed by it, and records of another version are kept but never served.
// tests/backends/llvm/codegen_version_test.cc fails when the emitted code of a pinned set of
// kernels changes while this stays the same.
inline constexpr int kCodegenVersion = 15;

struct CodegenOptions {
  // LLVM CPU name: "host" (the CPU this process runs on, with its features), or e.g. "znver4",
  // "skylake-avx512", "x86-64-v3". An unknown name is an Error.
  std::string cpu = "host";
  // Extra subtarget features, comma separated ("+avx512f,-avx512bw"); added to the host's
  // features when cpu is "host".
  std::string features;
  // 0: the target's default; 128, 256 or 512: LLVM's "prefer-vector-width" function attribute.
  int prefer_vector_width = 0;
  // 0..3: LLVM's optimization pipeline level (new PassBuilder) and code generation level.
  int opt_level = 3;
  // Allows floating-point reassociation (faster reductions; results differ in rounding).
  bool allow_reassociation = false;
  // Runs LLVM's verifier on the generated module; a failure is an Error (a code generator bug).
  bool verify = true;
};

class JitEngine;

// A set of kernel functions compiled to machine code in one JIT dylib. The code lives as long
// as this object. Lookup and Run may be called from several threads at once.
class CompiledModule {
 public:
  using KernelEntry = void (*)(void** buffers);

  // `symbols` maps a kernel's name to the JIT symbol of its code where they differ (kernels
  // compiled once under a name derived from their structure, see kernel_object_cache.h).
  CompiledModule(std::unique_ptr<JitEngine> engine, std::vector<ir::KernelFunction> kernels,
                 const std::map<std::string, std::string>& symbols = {});
  ~CompiledModule();
  CompiledModule(const CompiledModule&) = delete;
  CompiledModule& operator=(const CompiledModule&) = delete;

  // The machine code entry of a kernel; Error when this module has no kernel of that name.
  KernelEntry Lookup(const std::string& kernel_name) const;
  // Runs a kernel on one tensor per parameter (inputs then outputs, in parameter order); outputs
  // are written in place. Error when a shape or dtype does not match the parameter buffer, or
  // when a written tensor shares storage with another argument, and when a parallel loop of the
  // kernel failed (see tandem_parallel_for). Lookup's entry leaves such a failure pending on the
  // calling thread: take it with TakeParallelForError (backends/runtime/thread_pool.h).
  void Run(const std::string& kernel_name, const std::vector<ir::Tensor>& args) const;
  // Allocates the outputs, runs the kernel on `inputs` and returns the outputs.
  std::vector<ir::Tensor> Run(const std::string& kernel_name, const std::vector<ir::Tensor>& inputs,
                              bool allocate_outputs) const;

  std::vector<std::string> kernel_names() const;

 private:
  const ir::KernelFunction& Kernel(const std::string& kernel_name) const;

  std::unique_ptr<JitEngine> engine_;
  std::map<std::string, ir::KernelFunction> kernels_;
  std::map<std::string, KernelEntry> entries_;
};

// Compiles kernels (distinct, non-empty names) into one module. Errors (unknown intrinsic,
// unsupported dtype, unbound variable, unknown buffer, bad options) name the kernel. Each
// distinct kernel (by structure and options) is optimized and compiled once per process and its
// object reused by later calls (KernelObjectCache::Global()); the code is the same either way.
std::unique_ptr<CompiledModule> CompileKernels(const std::vector<ir::KernelFunction>& kernels,
                                               const CodegenOptions& options = {});

// A kernel's machine code as CompileKernels links it: a relocatable object defining `symbol`, a
// name derived from the kernel's structure and the code generation settings.
struct KernelObject {
  std::string symbol;
  std::shared_ptr<const std::string> object;
};
// The objects CompileKernels(kernels, options) links, one per distinct kernel, compiled (or found)
// and kept in KernelObjectCache::Global() like CompileKernels does, without linking them. For
// compiling in another process: once the objects are inserted into this process's cache under
// their symbols, CompileKernels only links. Errors as CompileKernels.
std::vector<KernelObject> CompileKernelObjects(const std::vector<ir::KernelFunction>& kernels,
                                               const CodegenOptions& options = {});
// Whether KernelObjectCache::Global() holds every object CompileKernelObjects(kernels, options)
// would give, so that compiling them would only look them up (nothing for LLVM to do). Counts
// neither hits nor misses. Errors on bad options as CompileKernels.
bool KernelObjectsCached(const std::vector<ir::KernelFunction>& kernels,
                         const CodegenOptions& options = {});

// The optimized LLVM IR of the kernels as text (for tests and debugging).
std::string EmitLlvmIr(const std::vector<ir::KernelFunction>& kernels,
                       const CodegenOptions& options = {});
// The target assembly of the kernels (AT&T syntax).
std::string EmitAssembly(const std::vector<ir::KernelFunction>& kernels,
                         const CodegenOptions& options = {});
// Writes a relocatable ELF object file with one global function per kernel; it references
// tandem_parallel_for, aligned_alloc, free and libm functions, to be linked with
// tandem_backends. Error when the file cannot be written.
void EmitObjectFile(const std::vector<ir::KernelFunction>& kernels, const std::string& path,
                    const CodegenOptions& options = {});

// The CPU name and feature string that `options` resolve to (e.g. for the tuning database).
std::string DescribeTarget(const CodegenOptions& options = {});

// The vector unit of a CPU (`cpu` and `features` as in CodegenOptions): f32 lanes of its widest
// vector and its number of vector registers (AVX-512F: 16 lanes and 32 registers; AVX/AVX2: 8
// and 16; otherwise 4 and 16), and what the default schedules know of its cores: FMAs of the
// widest vector per cycle (2 times the ratio of the 256-bit FMA's throughput to the widest one's
// in LLVM's scheduling model of the CPU: 1 on Zen 4, 2 elsewhere), and for the host CPU its L1
// data cache (from /sys/devices/system/cpu/cpu0/cache; unknown for another CPU, or when not
// readable). Error on an unknown CPU or feature.
struct VectorUnit {
  int f32_lanes = 16;
  int registers = 32;
  kernels::CpuCoreModel core;

  // The core model for vectors of `lanes` f32 lanes: the FMA rate is the widest vector's, so for
  // narrower vectors (a target's vector_bits below the widest) it is left unknown.
  kernels::CpuCoreModel CoreAt(int lanes) const {
    kernels::CpuCoreModel at = core;
    if (lanes < f32_lanes) at.fma_per_cycle = 0;
    return at;
  }
};
VectorUnit TargetVectorUnit(const std::string& cpu = "host", const std::string& features = "");

// The default-schedule options for kernels that will run on `target`: its vector unit (lanes
// from target.vector_bits when set) and thread count. Register tiles planned for AVX-512 spill
// on AVX2's 16 registers, so every place that applies default schedules asks this.
kernels::DefaultScheduleOptions DefaultScheduleOptionsFor(const ir::Target& target);

// The kernel with the `binding < extent` guards of leaf blocks that only write local buffers
// dropped (relax_local_predicates.cc): their out-of-range instances then write padded rows of
// the local buffers and read global buffers at clamped indices, so a register tile whose split
// does not divide its axis keeps no guard inside its reduction loop. Blocks that write global
// buffers keep their guards, so the result is unchanged. CompileKernels applies it to every
// kernel; public for tests and debugging.
ir::KernelFunction RelaxLocalPredicates(const ir::KernelFunction& kernel);

// The kernel with the body of each parallel loop (or, where there is none, of each outermost
// loop) in several versions (version_interior_tiles.cc): selects that guard a load (an inlined
// pad's bounds checks), whose conditions are comparisons linear in the loops inside the body,
// are dropped in a copy that runs where a condition on the tile's position proves that they
// all hold throughout the tile (a check no position decides, on the tile's own loops alone,
// stays in every copy: LLVM folds it in each unrolled copy). Edge versions follow: where the
// checks that can fail depend on one position atom at one value (the first or last row or
// column tile), a copy with that atom pinned to the value and the other checks dropped; then,
// for corners, copies with the atom that fails most often pinned and the other checks kept,
// and a last copy where that atom's checks all hold. The result is unchanged. CompileKernels
// applies it to every kernel; public for tests and debugging.
ir::KernelFunction VersionInteriorTiles(const ir::KernelFunction& kernel);

}  // namespace tandem::backends
