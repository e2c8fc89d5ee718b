// The plan of running a legalized graph function, shared by the CPU executable (Build) and the
// GPU one: a slot per tensor value (an input, a constant, a call result in one planned arena, or
// an output) and the calls in order, each with a slot per kernel parameter.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace tandem::backends {

struct ExecutionPlan {
  enum class SlotKind { kInput, kConstant, kArena, kOutput };
  struct Slot {
    SlotKind kind = SlotKind::kArena;
    int64_t index = 0;  // input / output number, or arena offset
    ir::Tensor constant;
    int64_t bytes = 0;
  };
  // A call_kernel or call_extern node with one slot per parameter: its inputs, then its results.
  struct Call {
    ir::ValueId node = -1;
    std::vector<int> args;
  };
  // An output that is an input or a constant (or a result returned twice) is copied into place.
  struct OutputCopy {
    int slot;
    int output;
  };

  std::vector<Slot> slots;
  std::vector<Call> calls;
  std::vector<OutputCopy> output_copies;
  std::vector<ir::TensorType> input_types;
  std::vector<ir::TensorType> output_types;
  int64_t arena_bytes = 0;      // the planned arena: intermediates whose lifetimes overlap
  int64_t unplanned_bytes = 0;  // what the intermediates would need without reuse
};

// Plans `function`, whose every call is a call_kernel or call_extern (Error naming the node of an
// op call left). Arena offsets are multiples of `alignment`, and two intermediates share bytes
// only when no call uses both, or, with `kernels` (the module holding the called kernels), when
// a kernel computes an output in place of an input (ir::InPlacePairs) that no later call and no
// output of the function uses: the output then takes the input's slot. An arena size overflowing
// int64 is an Error.
ExecutionPlan PlanExecution(const ir::GraphFunction& function, int64_t alignment,
                            const ir::IRModule* kernels = nullptr);

}  // namespace tandem::backends
