// TuneLayout: chooses the data layout of the model's convolutions by measurement: leave it,
// NCHW, NHWC, or blocked NCHW<x>c with x the number of float lanes of the target's vectors
// (and half that). Each choice is ConvertLayout with that layout.
#include <fmt/format.h>

#include "ir/op_registry.h"
#include "passes/tuning/knob_pass.h"

namespace tandem::passes {

namespace {

bool HasConvolution(const ir::IRModule& module) {
  for (const auto& [name, function] : module.graph_functions()) {
    for (const ir::Node& node : function->nodes) {
      if (node.kind == ir::NodeKind::kCall && node.op.rfind("conv", 0) == 0) return true;
    }
  }
  return false;
}

struct TuneLayoutOptions : SearchOptions {
  int64_t block = 16;
};

}  // namespace

void RegisterTuneLayout(PassRegistry& registry) {
  RegisterKnobPass<TuneLayoutOptions>(
      registry,
      {.name = "TuneLayout",
       .summary =
           "Choose the convolutions' data layout (none, NCHW, NHWC, NCHW<x>c) by measurement.",
       .required = {"InferType"},
       .arguments = {{"block", &TuneLayoutOptions::block,
                      "channel block x of the blocked layouts NCHW<x>c and NCHW<x/2>c"}}},
      [](const ir::IRModule&, PassContext& context, const TuneLayoutOptions& options) {
        int64_t block = options.block;
        if (block < 2)
          throw ir::Error(fmt::format("TuneLayout: block {} must be at least 2", block));
        std::vector<tuning::Choice> choices{KeepChoice("none")};
        std::vector<std::string> layouts{"NCHW", "NHWC", fmt::format("NCHW{}c", block),
                                         fmt::format("NCHW{}c", block / 2)};
        for (const std::string& layout : layouts) {
          choices.push_back(tuning::Choice{
              layout,
              [&context, layout](const ir::IRModule& m) {
                return RunRegisteredPass(context, "ConvertLayout", {{"layout", layout}}, m);
              },
              HasConvolution});
        }
        return tuning::Knob("TuneLayout", std::move(choices));
      });
}

}  // namespace tandem::passes
