#include "backends/runtime/execution_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ir/checked_math.h"
#include "ir/error.h"
#include "ir/kernel/in_place.h"

namespace tandem::backends {

using ir::Error;

namespace {

int64_t AlignUp(int64_t alignment, int64_t n) {
  return ir::CheckedAdd(n, alignment - 1, "Build: the aligned arena size") / alignment * alignment;
}

// An interval of the arena used by one tensor during [first, last] steps.
struct Lifetime {
  int slot;
  int64_t bytes;
  int first;
  int last;
  int64_t offset = -1;
};

// Best-fit placement: tensors in order of decreasing size, each at the lowest offset where it
// overlaps no already-placed tensor whose lifetime intersects its own.
int64_t PlanArena(std::vector<Lifetime>& lifetimes) {
  std::vector<Lifetime*> order;
  for (Lifetime& l : lifetimes) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(),
                   [](const Lifetime* a, const Lifetime* b) { return a->bytes > b->bytes; });
  std::vector<Lifetime*> placed;
  int64_t total = 0;
  for (Lifetime* l : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Lifetime* p : placed) {
      if (p->first <= l->last && l->first <= p->last)
        busy.emplace_back(p->offset, p->offset + p->bytes);  // checked when p was placed
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (l->bytes <= begin - offset) break;
      offset = std::max(offset, end);
    }
    l->offset = offset;
    total = std::max(total, ir::CheckedAdd(offset, l->bytes, "Build: the arena offset"));
    placed.push_back(l);
  }
  return total;
}

// With `kernels`, gives each kernel result that its kernel may compute in place of an input the
// input's slot, when the input is an arena slot no later call reads (in calling order, so that
// a chain of in-place calls shares one slot). Rewrites the calls' arguments; returns, for each
// slot, the slot whose memory it uses (itself when none).
std::vector<int> ShareInPlaceSlots(const ir::GraphFunction& fn, const ir::IRModule& kernels,
                                   ExecutionPlan& plan) {
  std::vector<int> memory_of(plan.slots.size());
  for (size_t s = 0; s < memory_of.size(); ++s) memory_of[s] = static_cast<int>(s);
  std::vector<int> last_use(plan.slots.size(), -1);
  for (size_t c = 0; c < plan.calls.size(); ++c) {
    for (int s : plan.calls[c].args) last_use[static_cast<size_t>(s)] = static_cast<int>(c);
  }
  for (size_t c = 0; c < plan.calls.size(); ++c) {
    ExecutionPlan::Call& call = plan.calls[c];
    const ir::Node& node = fn.node(call.node);
    for (int& s : call.args) s = memory_of[static_cast<size_t>(s)];
    if (node.kind != ir::NodeKind::kCallKernel || !kernels.HasKernel(node.callee)) continue;
    const ir::KernelFunction& kernel = kernels.GetKernel(node.callee);
    if (kernel.params.size() != call.args.size()) continue;
    for (const ir::InPlacePair& pair : ir::InPlacePairs(kernel)) {
      int input = call.args[static_cast<size_t>(pair.input)];
      int output = call.args[static_cast<size_t>(pair.output)];
      const ExecutionPlan::Slot& in = plan.slots[static_cast<size_t>(input)];
      const ExecutionPlan::Slot& out = plan.slots[static_cast<size_t>(output)];
      if (in.kind != ExecutionPlan::SlotKind::kArena ||
          out.kind != ExecutionPlan::SlotKind::kArena || in.bytes != out.bytes ||
          last_use[static_cast<size_t>(input)] != static_cast<int>(c) ||
          std::count(call.args.begin(), call.args.end(), input) != 1) {
        continue;
      }
      memory_of[static_cast<size_t>(output)] = input;
      last_use[static_cast<size_t>(input)] = last_use[static_cast<size_t>(output)];
    }
    for (int& s : call.args) s = memory_of[static_cast<size_t>(s)];
  }
  return memory_of;
}

}  // namespace

// Steps:
//   1. a slot per tensor value: inputs, constants, call results (tuples map to their fields'
//      slots), and the calls with their argument slots;
//   2. results that are returned become output slots; returned inputs and constants are copied;
//   3. with `kernels`, results computed in place take their input's slot;
//   4. each arena slot's lifetime over the calls, then best-fit placement in one arena.
ExecutionPlan PlanExecution(const ir::GraphFunction& fn, int64_t alignment,
                            const ir::IRModule* kernels) {
  ExecutionPlan plan;
  // Slots for every tensor value; tuples map to the slots of their fields.
  std::vector<std::vector<int>> value_slots(fn.nodes.size());
  auto new_slot = [&](ExecutionPlan::SlotKind kind, const ir::TensorType& type) {
    ExecutionPlan::Slot slot;
    slot.kind = kind;
    slot.bytes = type.num_bytes();
    plan.slots.push_back(slot);
    return static_cast<int>(plan.slots.size() - 1);
  };
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Node& p = fn.node(fn.params[i]);
    int s = new_slot(ExecutionPlan::SlotKind::kInput, p.type.tensor());
    plan.slots[static_cast<size_t>(s)].index = static_cast<int64_t>(i);
    value_slots[static_cast<size_t>(fn.params[i])] = {s};
    plan.input_types.push_back(p.type.tensor());
  }
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    const ir::Node& node = fn.nodes[i];
    switch (node.kind) {
      case ir::NodeKind::kInput:
        break;
      case ir::NodeKind::kConstant: {
        int s = new_slot(ExecutionPlan::SlotKind::kConstant, node.type.tensor());
        plan.slots[static_cast<size_t>(s)].constant = node.value;
        value_slots[i] = {s};
        break;
      }
      case ir::NodeKind::kTuple:
        for (ir::ValueId f : node.inputs) {
          for (int s : value_slots[static_cast<size_t>(f)]) value_slots[i].push_back(s);
        }
        break;
      case ir::NodeKind::kTupleGetItem: {
        // Fields of a tuple of tensors: one slot each (nested tuples are flattened in order).
        const ir::Type& tuple = fn.type_of(node.inputs[0]);
        size_t index = static_cast<size_t>(node.attrs.GetInt("index"));
        size_t first = 0;
        auto count = [](const ir::Type& t, auto&& self) -> size_t {
          if (t.is_tensor()) return 1;
          size_t n = 0;
          for (const ir::Type& f : t.fields()) n += self(f, self);
          return n;
        };
        for (size_t k = 0; k < index; ++k) first += count(tuple.fields()[k], count);
        size_t n = count(tuple.fields()[index], count);
        const auto& source = value_slots[static_cast<size_t>(node.inputs[0])];
        value_slots[i].assign(source.begin() + static_cast<std::ptrdiff_t>(first),
                              source.begin() + static_cast<std::ptrdiff_t>(first + n));
        break;
      }
      case ir::NodeKind::kCallKernel:
      case ir::NodeKind::kCallExtern: {
        ExecutionPlan::Call call;
        call.node = static_cast<ir::ValueId>(i);
        for (ir::ValueId id : node.inputs) {
          for (int s : value_slots[static_cast<size_t>(id)]) call.args.push_back(s);
        }
        std::vector<ir::TensorType> results;
        if (node.type.is_tensor()) {
          results.push_back(node.type.tensor());
        } else {
          for (const ir::Type& f : node.type.fields()) results.push_back(f.tensor());
        }
        for (const ir::TensorType& t : results) {
          int s = new_slot(ExecutionPlan::SlotKind::kArena, t);
          value_slots[i].push_back(s);
          call.args.push_back(s);
        }
        plan.calls.push_back(std::move(call));
        break;
      }
      case ir::NodeKind::kCall:
        throw Error(
            fmt::format("Build: node %{} still calls op '{}' after Legalize", node.name, node.op));
    }
  }

  // Outputs: produced slots become output slots; inputs/constants returned directly are copied.
  const std::vector<int>& result_slots = value_slots[static_cast<size_t>(fn.output)];
  plan.output_types = fn.OutputTensorTypes();
  std::map<int, int> output_of_slot;
  for (size_t k = 0; k < result_slots.size(); ++k) {
    int s = result_slots[k];
    ExecutionPlan::Slot& slot = plan.slots[static_cast<size_t>(s)];
    if (slot.kind == ExecutionPlan::SlotKind::kArena && !output_of_slot.count(s)) {
      slot.kind = ExecutionPlan::SlotKind::kOutput;
      slot.index = static_cast<int64_t>(k);
      output_of_slot[s] = static_cast<int>(k);
    } else {
      plan.output_copies.push_back({s, static_cast<int>(k)});
    }
  }

  std::vector<int> memory_of;
  if (kernels) memory_of = ShareInPlaceSlots(fn, *kernels, plan);

  // Liveness of arena slots over the steps, then placement.
  std::map<int, Lifetime> lifetimes;
  for (size_t st = 0; st < plan.calls.size(); ++st) {
    for (int s : plan.calls[st].args) {
      if (plan.slots[static_cast<size_t>(s)].kind != ExecutionPlan::SlotKind::kArena) continue;
      auto [it, inserted] = lifetimes.try_emplace(
          s, Lifetime{s, AlignUp(alignment, plan.slots[static_cast<size_t>(s)].bytes),
                      static_cast<int>(st), static_cast<int>(st)});
      if (!inserted) it->second.last = static_cast<int>(st);
    }
  }
  std::vector<Lifetime> list;
  for (auto& [s, l] : lifetimes) {
    list.push_back(l);
    plan.unplanned_bytes = ir::CheckedAdd(plan.unplanned_bytes, l.bytes, "Build: the arena size");
  }
  plan.arena_bytes = PlanArena(list);
  for (const Lifetime& l : list) plan.slots[static_cast<size_t>(l.slot)].index = l.offset;
  for (size_t s = 0; s < memory_of.size(); ++s) {
    auto shared = static_cast<size_t>(memory_of[s]);
    if (shared != s) plan.slots[s].index = plan.slots[shared].index;
  }
  return plan;
}

}  // namespace tandem::backends
