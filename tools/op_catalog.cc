#include "tools/op_catalog.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "backends/external/external_backend.h"
#include "backends/target/resolved_target.h"
#include "ir/attrs.h"
#include "ir/op_registry.h"
#include "kernels/compute/op_compute.h"

namespace tandem::tools {

namespace {

// What kernels/default_schedule.h's rules do with a kernel whose main block is of this kind.
std::string CpuDefaultSchedule(ir::PatternKind kind, bool has_compute) {
  if (!has_compute) return "none (no compute definition: rewritten before kernels are made)";
  switch (kind) {
    case ir::PatternKind::kOutElementwiseFusable:
      return "register tile of 16-lane vector accumulators, outer loops fused and parallel, "
             "epilogue inlined (ApplyDefaultSchedule rule 2; rule 4 when not vectorizable)";
    case ir::PatternKind::kReduction:
      return "contiguous reduction factored into per-lane partials (rule 3), else innermost "
             "spatial axis vectorized, outer loops parallel (rule 4)";
    case ir::PatternKind::kOpaque:
      return "by its blocks: reductions as rules 2-4, spatial blocks as rule 6";
    default:
      return "inlined into its consumer when fused, else innermost loop vectorized and outer "
             "loops fused and parallel (ApplyDefaultSchedule rules 1 and 6)";
  }
}

std::string GpuDefaultSchedule(ir::PatternKind kind, bool has_compute) {
  if (!has_compute) return "none (no compute definition)";
  switch (kind) {
    case ir::PatternKind::kOutElementwiseFusable:
      return "up to 4 x 4 outputs per thread in a local register tile, loops bound to "
             "blockIdx.x/threadIdx.x (ApplyGpuDefaultSchedule)";
    case ir::PatternKind::kReduction:
      return "long reductions factored into per-thread partials combined by a second launch "
             "(ApplyGpuDefaultSchedule)";
    default:
      return "leading spatial loops fused, split by the threads per block and bound to "
             "blockIdx.x/threadIdx.x (ApplyGpuDefaultSchedule)";
  }
}

std::string AttributeText(const ir::AttrSpec& spec) {
  std::string text = fmt::format("{}: {}", spec.name, ir::ToString(spec.kind));
  if (!spec.default_value) return text + " (required)";
  return text + " = " + ir::ToString(*spec.default_value);
}

bool Takes(const backends::OpMatcher& matcher, const std::string& op) {
  return std::find(matcher.ops.begin(), matcher.ops.end(), op) != matcher.ops.end();
}

OpImplementations Describe(const ir::OpDef& def) {
  OpImplementations out;
  out.op = def.name;
  out.doc = def.doc;
  out.pattern_kind = ir::ToString(def.pattern);
  out.min_inputs = def.min_inputs;
  out.max_inputs = def.max_inputs;
  for (const ir::AttrSpec& spec : def.attrs) out.attributes.push_back(AttributeText(spec));
  const kernels::ComputeDef* compute = kernels::FindCompute(def.name);
  out.has_compute = compute != nullptr;
  if (compute) out.compute_operands = compute->operand_names;
  for (const std::string& kind : backends::CodeGeneratorKinds()) {
    out.default_schedules.emplace_back(
        kind, kind == "cuda" ? GpuDefaultSchedule(def.pattern, out.has_compute)
                             : CpuDefaultSchedule(def.pattern, out.has_compute));
  }
  const auto& registry = backends::ExternalBackendRegistry::Global();
  for (const std::string& name : registry.Names()) {
    const backends::ExternalBackend& backend = registry.Get(name);
    std::string why;
    bool available = backend.Available(&why);
    for (const backends::Pattern& pattern : backend.patterns()) {
      if (Takes(pattern.anchor, def.name)) {
        out.backends.push_back({name, pattern.name, "anchor", pattern.anchor.ToString(), available,
                                available ? "" : why});
      }
      for (const backends::OpMatcher& step : pattern.epilogue) {
        if (!Takes(step, def.name)) continue;
        out.backends.push_back(
            {name, pattern.name, "epilogue", step.ToString(), available, available ? "" : why});
      }
    }
  }
  return out;
}

}  // namespace

std::vector<OpImplementations> OpCatalog() {
  const ir::OpRegistry& registry = ir::OpRegistry::Global();
  std::vector<OpImplementations> ops;
  for (const std::string& name : registry.Names()) ops.push_back(Describe(registry.Get(name)));
  std::sort(ops.begin(), ops.end(),
            [](const OpImplementations& a, const OpImplementations& b) { return a.op < b.op; });
  return ops;
}

OpImplementations DescribeOp(const std::string& op) {
  return Describe(ir::OpRegistry::Global().Get(op));
}

std::string OpCatalogText(const std::vector<OpImplementations>& ops) {
  std::string text =
      fmt::format("{:<28} {:<24} {:<8} {}\n", "op", "fusion kind", "compute", "external backends");
  for (const OpImplementations& op : ops) {
    std::vector<std::string> backends;
    for (const OpBackendUse& use : op.backends) {
      std::string entry = fmt::format("{} ({})", use.backend, use.role);
      if (std::find(backends.begin(), backends.end(), entry) == backends.end()) {
        backends.push_back(entry);
      }
    }
    text += fmt::format("{:<28} {:<24} {:<8} {}\n", op.op, op.pattern_kind,
                        op.has_compute ? "yes" : "no",
                        backends.empty() ? "-" : fmt::format("{}", fmt::join(backends, ", ")));
  }
  return text;
}

std::string OpDetailText(const OpImplementations& op) {
  std::string inputs = op.max_inputs < 0 ? fmt::format("{} or more", op.min_inputs)
                       : op.min_inputs == op.max_inputs
                           ? fmt::format("{}", op.min_inputs)
                           : fmt::format("{} to {}", op.min_inputs, op.max_inputs);
  std::string text = fmt::format("{}: {}\n  operands: {}\n  fusion kind: {}\n", op.op, op.doc,
                                 inputs, op.pattern_kind);
  text += "  attributes:" + std::string(op.attributes.empty() ? " none\n" : "\n");
  for (const std::string& attribute : op.attributes) text += "    " + attribute + "\n";
  text += op.has_compute ? fmt::format("  compute definition: yes (operands {})\n",
                                       fmt::join(op.compute_operands, ", "))
                         : "  compute definition: none\n";
  text += "  default schedule:\n";
  for (const auto& [kind, schedule] : op.default_schedules) {
    text += fmt::format("    {}: {}\n", kind, schedule);
  }
  text += "  external backends:" + std::string(op.backends.empty() ? " none\n" : "\n");
  for (const OpBackendUse& use : op.backends) {
    text += fmt::format("    {}: pattern {} as {} {}{}\n", use.backend, use.pattern, use.role,
                        use.matcher, use.available ? "" : " (unavailable: " + use.why + ")");
  }
  return text;
}

}  // namespace tandem::tools
