#include "kernels/legalize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"

namespace tandem::kernels {

namespace {

std::string SafeName(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out;
}

class Legalizer {
 public:
  Legalizer(const ir::IRModule& module, const LegalizeOptions& options)
      : module_(module), options_(options) {
    for (const auto& [name, kernel] : module.kernel_functions()) {
      by_hash_[ir::StructuralHash(*kernel)].push_back(name);
    }
  }

  ir::IRModule Run() {
    ir::IRModule out = module_;
    for (const auto& [name, fn] : module_.graph_functions()) {
      if (fn->ExternBackend().empty()) out.Add(Rewrite(*fn, out));  // extern: its backend's
    }
    return out;
  }

 private:
  // The name of a kernel equal to `kernel` already in `module`, adding it when new.
  std::string Intern(ir::KernelFunction kernel, ir::IRModule& module) {
    ir::KernelFunction unnamed = kernel;
    uint64_t hash = 0;
    {
      unnamed.name = "";
      hash = ir::StructuralHash(unnamed);
    }
    for (const std::string& existing : by_hash_[hash]) {
      ir::KernelFunction other = module.GetKernel(existing);
      other.name = "";
      if (ir::StructuralEqual(other, unnamed)) return existing;
    }
    std::string name = kernel.name;
    for (int i = 1; module.HasKernel(name); ++i) name = fmt::format("{}_{}", kernel.name, i);
    kernel.name = name;
    module.AddKernel(std::move(kernel));
    by_hash_[hash].push_back(name);
    return name;
  }

  // A fusion group (call nodes annotated with the same "group"): its members in order, the
  // values it reads from outside, and its output (the last member, the only one used outside).
  struct Group {
    std::vector<ir::ValueId> members;
    std::vector<ir::ValueId> externals;
    ir::ValueId output = -1;
  };

  std::map<int64_t, Group> CollectGroups(const ir::GraphFunction& fn) {
    std::map<int64_t, Group> groups;
    std::vector<int64_t> group_of(fn.nodes.size(), -1);
    for (size_t i = 0; i < fn.nodes.size(); ++i) {
      const ir::Node& n = fn.nodes[i];
      if (n.kind != ir::NodeKind::kCall || !n.annotations.Has("group")) continue;
      int64_t g = n.annotations.GetInt("group");
      group_of[i] = g;
      groups[g].members.push_back(static_cast<ir::ValueId>(i));
    }
    for (auto& [g, group] : groups) {
      group.output = group.members.back();
      for (ir::ValueId m : group.members) {
        for (ir::ValueId in : fn.node(m).inputs) {
          if (group_of[static_cast<size_t>(in)] == g) continue;
          if (std::find(group.externals.begin(), group.externals.end(), in) ==
              group.externals.end()) {
            group.externals.push_back(in);
          }
        }
      }
    }
    // Every member but the output must be used only inside its group.
    for (size_t i = 0; i < fn.nodes.size(); ++i) {
      for (ir::ValueId in : fn.nodes[i].inputs) {
        int64_t g = group_of[static_cast<size_t>(in)];
        if (g < 0 || group_of[i] == g || in == groups[g].output) continue;
        throw ir::Error(
            fmt::format("Legalize: value %{} of fusion group {} is used outside the group "
                        "by %{}; a group has one output",
                        fn.node(in).name, g, fn.nodes[i].name),
            ir::ErrorLocation{.pass = "Legalize", .node = fn.node(in).name});
      }
    }
    for (const auto& [g, group] : groups) {
      if (fn.output >= 0 && group_of[static_cast<size_t>(fn.output)] == g &&
          fn.output != group.output) {
        throw ir::Error(
            fmt::format("Legalize: fusion group {} returns a value other than its output", g));
      }
    }
    return groups;
  }

  // The extents of the value named `name` in a dynamic build (empty: static).
  TensorExtents ExtentsOf(const std::string& name) const {
    if (!options_.dynamic) return {};
    auto it = options_.dynamic->values.find(name);
    return it == options_.dynamic->values.end() ? TensorExtents{} : it->second;
  }
  TensorExtents ExtentsOf(const ir::GraphFunction& fn, ir::ValueId id) const {
    return ExtentsOf(fn.node(id).name);
  }

  // The extents of a kernel's parameters for a call reading `inputs` and defining `output`;
  // empty when none is dynamic.
  std::vector<TensorExtents> KernelExtents(const ir::GraphFunction& fn,
                                           const std::vector<ir::ValueId>& inputs,
                                           ir::ValueId output) const {
    std::vector<TensorExtents> extents;
    bool dynamic = false;
    for (ir::ValueId id : inputs) {
      extents.push_back(ExtentsOf(fn, id));
      dynamic = dynamic || !extents.back().empty();
    }
    const ir::Type& type = fn.type_of(output);
    if (type.is_tensor()) {
      extents.push_back(ExtentsOf(fn, output));
      dynamic = dynamic || !extents.back().empty();
    } else {
      // Several results (split): one output parameter per element.
      for (size_t k = 0; k < type.fields().size(); ++k) {
        extents.push_back(ExtentsOf(TupleElementName(fn.node(output).name, k)));
        dynamic = dynamic || !extents.back().empty();
      }
    }
    return dynamic ? extents : std::vector<TensorExtents>{};
  }

  // Checks that `op` (of node `node`) may reduce as `plan`, made from its own compute
  // definition, does: over the dynamic axis only when its result does not depend on the length
  // of the reduced axis, or (a mean) the applied plan makes it follow the valid length
  // (kernels/dynamic_means.h).
  void CheckLengthFree(const std::string& op, const std::string& node,
                       const DynamicPlan& plan) const {
    static const std::set<std::string> kLengthFree = {
        "matmul",      "batch_matmul", "dense",  "packed_matmul", "softmax",
        "log_softmax", "sum",          "mean",   "max",           "min",
        "prod",        "argmax",       "argmin", "cumsum",        "global_avg_pool2d"};
    if (!plan.has_dynamic_reduction() || kLengthFree.count(op)) return;
    std::string symbol;
    for (const DynamicIterator& it : plan.iterators) {
      if (it.reduction) symbol = options_.dynamic->ranges.at(it.extent.symbol).symbol;
    }
    throw ir::Error(fmt::format("a dynamic build cannot lower '{}' over the dynamic axis '{}': "
                                "its result depends on the length of the axis it reduces",
                                op, symbol),
                    ir::ErrorLocation{.op = op, .node = node});
  }

  // Whether the selects of `node`'s op pad its input or place its parts, so that a read they
  // bound by an axis's extent may read padding, or the next part, from the valid length on
  // (kernels/dynamic_padding.h): convolutions, max pooling, a constant pad and a concatenation.
  // Elementwise, broadcast and injective ops (a reshape, a transpose) have no such selects, so a
  // fusion group of these and such ops may pad too; any other op may not (a reflecting pad
  // mirrors at the bound, an average pool divides by the taps inside the input at the bound).
  static bool PadsInput(const ir::Node& node) {
    static const std::set<std::string> kPadding = {"conv1d", "conv2d", "conv3d", "max_pool2d",
                                                   "concat"};
    if (kPadding.count(node.op)) return true;
    return node.op == "pad" && node.attrs.GetString("mode", "constant") == "constant";
  }
  static bool PadsOrMapsElements(const ir::Node& node) {
    static const std::set<std::string> kSelecting = {"split", "pad", "gather"};
    if (PadsInput(node)) return true;
    if (kSelecting.count(node.op)) return false;  // a pad here is not a constant one
    ir::PatternKind pattern = ir::OpRegistry::Global().Get(node.op).pattern;
    return pattern == ir::PatternKind::kElementwise || pattern == ir::PatternKind::kBroadcast ||
           pattern == ir::PatternKind::kInjective;
  }

  // CheckLengthFree for member `id` of a fusion group, planned on its own compute definition.
  void CheckMember(const ir::GraphFunction& fn, ir::ValueId id) const {
    const ir::Node& node = fn.node(id);
    std::vector<TensorExtents> extents = KernelExtents(fn, node.inputs, id);
    if (extents.empty()) return;
    std::vector<ir::TensorType> inputs;
    for (ir::ValueId in : node.inputs) inputs.push_back(fn.type_of(in).tensor());
    ir::KernelFunction kernel =
        LowerOpCall(SafeName(node.op), node.op, node.attrs, inputs, node.type);
    CheckLengthFree(
        node.op, node.name,
        PlanDynamicIterators(kernel, extents, options_.dynamic->ranges, {}, PadsInput(node)));
  }

  // `unscheduled`, scheduled; for parameters with dynamic `extents`, planned and with the plan
  // applied.
  // `check_op` (a single call's op) is checked with CheckLengthFree on the same plan.
  // `padded_reads`: the kernel's selects that bound an axis pad it (PadsInput).
  ir::KernelFunction ScheduleDynamic(ir::KernelFunction unscheduled,
                                     const std::vector<TensorExtents>& extents,
                                     const std::map<std::string, TensorExtents>& intermediates = {},
                                     const ir::Node* check_op = nullptr,
                                     bool padded_reads = false) {
    if (extents.empty()) return Schedule(std::move(unscheduled));
    DynamicPlan plan = PlanDynamicIterators(unscheduled, extents, options_.dynamic->ranges,
                                            intermediates, padded_reads);
    if (check_op) CheckLengthFree(check_op->op, check_op->name, plan);
    DefaultScheduleOptions schedule = options_.schedule;
    for (const DynamicIterator& it : plan.iterators) {
      schedule.dynamic_iterators[it.block].push_back(it.iterator);
    }
    return ApplyDynamicIterators(Schedule(std::move(unscheduled), schedule), plan);
  }

  // The graph parameter holding the dynamic size in `fn`.
  ir::ValueId ExtentParameter(const ir::GraphFunction& fn) const {
    for (ir::ValueId p : fn.params) {
      if (fn.node(p).name == options_.dynamic->extent_value) return p;
    }
    throw ir::Error(fmt::format("a dynamic build needs the parameter %{} in graph '{}'",
                                options_.dynamic->extent_value, fn.name));
  }

  ir::KernelFunction LowerGroup(const ir::GraphFunction& fn, const Group& group) {
    for (ir::ValueId m : group.members) CheckMember(fn, m);
    ir::GraphBuilder b("group");
    std::map<ir::ValueId, ir::ValueId> local;
    for (size_t k = 0; k < group.externals.size(); ++k) {
      const ir::Type& t = fn.type_of(group.externals[k]);
      if (!t.is_tensor()) throw ir::Error("Legalize: a fusion group cannot read a tuple");
      local[group.externals[k]] = b.Input(fmt::format("in{}", k), t.tensor());
    }
    std::string name = "fused";
    for (ir::ValueId m : group.members) {
      const ir::Node& n = fn.node(m);
      std::vector<ir::ValueId> operands;
      for (ir::ValueId in : n.inputs) operands.push_back(local.at(in));
      local[m] = b.Call(n.op, operands, n.attrs);
      name += "_" + SafeName(n.op);
    }
    ir::GraphFunction lowered = b.Finish(local.at(group.output));
    std::map<std::string, TensorExtents> intermediates;
    for (ir::ValueId m : group.members) {
      TensorExtents extents = ExtentsOf(fn, m);
      if (!extents.empty()) intermediates[lowered.node(local.at(m)).name] = std::move(extents);
    }
    bool padded_reads = true;
    for (ir::ValueId m : group.members)
      padded_reads = padded_reads && PadsOrMapsElements(fn.node(m));
    return ScheduleDynamic(LowerGraphFunction(lowered, name),
                           KernelExtents(fn, group.externals, group.output), intermediates, nullptr,
                           padded_reads);
  }

  // The provider's schedule when it has one, else the default schedule (when enabled).
  ir::KernelFunction Schedule(ir::KernelFunction kernel) {
    return Schedule(std::move(kernel), options_.schedule);
  }
  // The same with the default schedules' options `schedule` (a dynamic kernel's).
  ir::KernelFunction Schedule(ir::KernelFunction kernel, const DefaultScheduleOptions& schedule) {
    if (options_.schedule_provider) {
      if (std::optional<ir::KernelFunction> tuned = options_.schedule_provider(kernel)) {
        return *std::move(tuned);
      }
    }
    if (options_.apply_default_schedule && options_.gpu) {
      return ApplyGpuDefaultSchedule(kernel, options_.gpu_schedule).function();
    }
    if (options_.apply_default_schedule) return ApplyDefaultSchedule(kernel, schedule).function();
    return kernel;
  }

  ir::GraphFunction Rewrite(const ir::GraphFunction& fn, ir::IRModule& module) {
    std::map<int64_t, Group> groups = CollectGroups(fn);
    std::map<ir::ValueId, const Group*> output_of;
    std::set<ir::ValueId> inner;
    for (const auto& [g, group] : groups) {
      output_of[group.output] = &group;
      for (ir::ValueId m : group.members) {
        if (m != group.output) inner.insert(m);
      }
    }
    if (!groups.empty()) {
      // Rebuild: drop inner members, turn each group output into one kernel call.
      ir::GraphFunction out;
      out.name = fn.name;
      out.attrs = fn.attrs;
      std::vector<ir::ValueId> map(fn.nodes.size(), -1);
      for (size_t i = 0; i < fn.nodes.size(); ++i) {
        if (inner.count(static_cast<ir::ValueId>(i))) continue;
        ir::Node n = fn.nodes[i];
        auto it = output_of.find(static_cast<ir::ValueId>(i));
        if (it != output_of.end()) {
          ir::KernelFunction kernel;
          try {
            kernel = LowerGroup(fn, *it->second);
          } catch (const ir::Error& e) {
            throw e.WithNode(n.name).WithPass("Legalize");
          }
          n.kind = ir::NodeKind::kCallKernel;
          n.inputs = it->second->externals;
          if (!KernelExtents(fn, n.inputs, static_cast<ir::ValueId>(i)).empty()) {
            n.inputs.push_back(ExtentParameter(fn));
          }
          n.attrs = ir::Attrs{};
          n.op = kernel.name;
          n.callee = Intern(std::move(kernel), module);
        }
        for (ir::ValueId& in : n.inputs) in = map[static_cast<size_t>(in)];
        map[i] = static_cast<ir::ValueId>(out.nodes.size());
        out.nodes.push_back(std::move(n));
      }
      for (ir::ValueId p : fn.params) out.params.push_back(map[static_cast<size_t>(p)]);
      out.output = map[static_cast<size_t>(fn.output)];
      return RewriteCalls(out, module);
    }
    return RewriteCalls(fn, module);
  }

  ir::GraphFunction RewriteCalls(const ir::GraphFunction& fn, ir::IRModule& module) {
    ir::GraphFunction out = fn;
    for (ir::Node& node : out.nodes) {
      if (node.kind != ir::NodeKind::kCall) continue;
      std::vector<ir::TensorType> inputs;
      for (ir::ValueId id : node.inputs) inputs.push_back(fn.type_of(id).tensor());
      std::string base = SafeName(node.op);
      ir::KernelFunction kernel;
      ir::ValueId id = static_cast<ir::ValueId>(&node - out.nodes.data());
      std::vector<TensorExtents> extents;
      try {
        extents = KernelExtents(fn, node.inputs, id);
        kernel = ScheduleDynamic(LowerOpCall(base, node.op, node.attrs, inputs, node.type), extents,
                                 {}, &node, PadsInput(node));
      } catch (const ir::Error& e) {
        throw e.WithNode(node.name).WithPass("Legalize");
      }
      if (!extents.empty()) node.inputs.push_back(ExtentParameter(fn));
      node.kind = ir::NodeKind::kCallKernel;
      node.callee = Intern(std::move(kernel), module);
    }
    return out;
  }

  const ir::IRModule& module_;
  const LegalizeOptions& options_;
  std::unordered_map<uint64_t, std::vector<std::string>> by_hash_;
};

}  // namespace

ir::IRModule Legalize(const ir::IRModule& module, const LegalizeOptions& options) {
  return Legalizer(module, options).Run();
}

}  // namespace tandem::kernels
