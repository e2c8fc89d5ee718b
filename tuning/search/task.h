// Tuning tasks: the distinct kernels of a model, each with its weight.
//
// ExtractTasks lowers a module's graph functions without schedules (Legalize with the default
// schedule off) and keeps one task per distinct kernel: kernels are identified by the structural
// hash of the unscheduled kernel with its name cleared (the workload hash in the database), and
// weighted by how many calls of the model run them. Tasks come in order of first appearance.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/kernel/stmt.h"

namespace tandem::tuning {

struct TuningTask {
  std::string workload_hash;  // 16 hex digits
  std::string name;           // the kernel's name in the legalized module (readable)
  ir::KernelFunction kernel;  // unscheduled
  int64_t weight = 1;         // calls per run of the model
  double flops = 0;           // floating-point operations per call (estimate)
};

std::vector<TuningTask> ExtractTasks(const ir::IRModule& module);

// The workload hash of an unscheduled kernel (its name does not count).
std::string KernelWorkloadHash(const ir::KernelFunction& unscheduled);
// Floating-point operations one call of `kernel` performs: every float arithmetic operation or
// intrinsic of every store, times the extents of the loops around it (an estimate: selects and
// conditions count as one).
double EstimateFlops(const ir::KernelFunction& kernel);
// A module whose function "main" takes the kernel's inputs and returns its outputs by calling
// it (how a single kernel is built and measured).
ir::IRModule SingleKernelModule(const ir::KernelFunction& kernel);

}  // namespace tandem::tuning
