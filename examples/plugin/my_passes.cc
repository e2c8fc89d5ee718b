// An example Tandem plugin: a heuristic pass (ReluToClip), a schedule rule, a mutator and an
// external backend (plugin_relu), registered when `tandem --load-plugin libmy_passes.so` or
// `tandem.load_plugin("libmy_passes.so")` loads it.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

#include "ir/error.h"
#include "passes/graph_utils.h"
#include "plugins/plugin.h"

namespace {

using namespace tandem;

// ReluToClip(max=inf): every relu(x) becomes clip(x, min=0, max=max); with the default max the
// model computes the same.
struct ReluToClipOptions {
  double max = std::numeric_limits<double>::infinity();
};

ir::IRModule ReluToClip(const ir::IRModule& module, const ReluToClipOptions& options) {
  return passes::MapGraphFunctions(module, [&](const ir::GraphFunction& function) {
    return passes::RewriteNodes(
        function, [&](ir::ValueId id, ir::GraphFunction& out, const std::vector<ir::ValueId>& map) {
          const ir::Node& node = function.node(id);
          if (node.kind != ir::NodeKind::kCall || node.op != "relu") return ir::ValueId{-1};
          ir::Node clip = node;
          clip.op = "clip";
          clip.inputs = {map[node.inputs[0]]};
          clip.attrs = ir::Attrs{{"min", 0.0}, {"max", options.max}};
          return passes::AppendNode(out, clip);
        });
  });
}

// A schedule rule and a mutator that defer to built-in ones under names of their own: what a
// plugin with its own search-space components registers.
class PluginAutoInline : public kernels::ScheduleRule {
 public:
  explicit PluginAutoInline(const kernels::SearchTarget& target)
      : inner_(kernels::MakeScheduleRule("auto_inline", target)) {}
  std::string name() const override { return "plugin_auto_inline"; }
  std::vector<kernels::Schedule> Apply(const kernels::Schedule& schedule,
                                       const kernels::BlockRV& block) const override {
    return inner_->Apply(schedule, block);
  }

 private:
  kernels::ScheduleRulePtr inner_;
};

class PluginMutateTileSize : public kernels::Mutator {
 public:
  explicit PluginMutateTileSize(const kernels::SearchTarget& target)
      : inner_(kernels::MakeMutator("mutate_tile_size", target)) {}
  std::string name() const override { return "plugin_mutate_tile_size"; }
  std::optional<ir::Trace> Apply(const ir::Trace& trace, const ir::KernelFunction& kernel,
                                 kernels::RandomState& random) const override {
    return inner_->Apply(trace, kernel, random);
  }

 private:
  kernels::MutatorPtr inner_;
};

// An external backend that takes a lone f32 relu and runs it as a plain loop.
class ReluFunction : public backends::ExternalFunction {
 public:
  explicit ReluFunction(int64_t elements) : elements_(elements) {}
  void Run(void* const* arguments) override {
    const float* in = static_cast<const float*>(arguments[0]);
    float* out = static_cast<float*>(arguments[1]);
    for (int64_t i = 0; i < elements_; ++i) out[i] = std::max(in[i], 0.0f);
  }
  std::string Describe() const override { return "plugin_relu: a loop of max(x, 0)"; }

 private:
  int64_t elements_;
};

class PluginReluBackend : public backends::ExternalBackend {
 public:
  PluginReluBackend() {
    backends::OpMatcher relu;
    relu.ops = {"relu"};
    relu.constraint_text = "f32";
    relu.constraint = [](const ir::GraphFunction& function,
                         const ir::Node& node) -> std::optional<std::string> {
      if (node.type.is_tensor() && node.type.tensor().dtype == ir::DataType::kFloat32) {
        return std::nullopt;
      }
      return "not an f32 tensor";
    };
    patterns_.push_back({"relu", relu, {}});
  }
  std::string name() const override { return "plugin_relu"; }
  bool Available(std::string* why) const override { return true; }
  const std::vector<backends::Pattern>& patterns() const override { return patterns_; }
  std::unique_ptr<backends::ExternalFunction> Compile(
      const ir::GraphFunction& subgraph) const override {
    if (subgraph.params.size() != 1) throw ir::Error("plugin_relu takes one operand");
    return std::make_unique<ReluFunction>(
        subgraph.type_of(subgraph.params[0]).tensor().num_elements());
  }

 private:
  std::vector<backends::Pattern> patterns_;
};

}  // namespace

TANDEM_PLUGIN(registrar) {
  passes::RegisterFunctionPass(
      registrar.passes,
      passes::PassDeclaration<ReluToClipOptions>{
          .name = "ReluToClip",
          .summary = "Replace every relu by clip(min=0, max) (a plugin's pass).",
          .required = {"InferType"},
          .arguments = {{"max", &ReluToClipOptions::max, "upper bound of the clip"}}},
      [](const ir::IRModule& module, passes::PassContext&, const ReluToClipOptions& options) {
        return ReluToClip(module, options);
      });
  kernels::RegisterScheduleRule("plugin_auto_inline", [](const kernels::SearchTarget& target) {
    return std::make_shared<PluginAutoInline>(target);
  });
  kernels::RegisterMutator("plugin_mutate_tile_size", [](const kernels::SearchTarget& target) {
    return std::make_shared<PluginMutateTileSize>(target);
  });
  registrar.backends.Register(std::make_shared<PluginReluBackend>());
}
