// The built-in pipelines. Each is plain pipeline text, so `tandem pipelines NAME` shows exactly
// what runs; target-specific variants are registered with a target kind.
#include <string>

#include "ir/attrs.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::pipelines {

namespace {

// The heuristic graph passes `sequential` and `joint` both start with.
constexpr const char* kGraphPrefix =
    "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, CombineParallelMatmul, "
    "DenseToMatmul";

// The graph passes of the untuned pipelines (default_heuristic, default_tuning): kGraphPrefix
// with the convolutions moved into channels-last. A heuristic, not a measurement: our kernels
// vectorize a channels-last convolution along its channels (no tail on the spatial axes, a
// depthwise convolution's taps in registers), and every convolution network measured ran
// faster so (EfficientNet-B0 3.8x, MobileNetV2 2x, ResNet-18/50 1.3x with default schedules;
// docs/performance.md). Networks without convolutions are unchanged.
constexpr const char* kHeuristicGraphPasses =
    "InferType, SimplifyExpr, FoldConstant, ConvertLayout(layout=\"NHWC\"), InferType, "
    "FoldConstant, FuseLayerNorm, FuseGelu, CombineParallelMatmul, DenseToMatmul";

// What `sequential` runs after kGraphPrefix; `joint` runs the same chain as its BestOf
// alternative, so that the candidate sequential would pick is always among joint's finalists.
constexpr const char* kSequentialChain =
    "TuneLayout(eval=[FoldConstant, FuseOps]), InferType, "
    "TuneConvAlgorithm(per_conv=1, eval=[FoldConstant, InferType, FuseOps]), "
    "FoldConstant, InferType, "
    "TuneBackendPlacement(eval=[PackMatmulWeights, PackConvWeights, FuseOps]), FuseOps, "
    "DeadCodeElimination, TuneKernels";

}  // namespace

void RegisterBuiltinPipelines(PipelineRegistry& registry) {
  registry.Register(
      {"default_heuristic",
       "Heuristic graph passes (convolutions in channels-last), then lowering to kernels with "
       "default schedules.",
       std::string(kHeuristicGraphPasses) +
           ", PackMatmulWeights, PackConvWeights, FuseOps, DeadCodeElimination, Legalize",
       ""});
  registry.Register({"default_heuristic",
                     "Heuristic graph passes for a GPU, then lowering to kernels with default GPU "
                     "schedules (no CPU weight packing).",
                     "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, "
                     "CombineParallelMatmul, FuseOps, DeadCodeElimination, Legalize",
                     "cuda"});
  registry.Register({"all_cublas",
                     "The GPU heuristic graph passes with every matmul, batched matmul and dense "
                     "cuBLAS takes placed on cuBLAS (run on the executable's stream, in device "
                     "memory); the rest is ours with default GPU schedules. Without a CUDA device "
                     "cuBLAS is unavailable and nothing is placed.",
                     "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, "
                     "CombineParallelMatmul, PlaceOnBackend(backend=\"cublas\"), FuseOps, "
                     "DeadCodeElimination, Legalize",
                     "cuda"});
  registry.Register({"graph_tuning",
                     "The graph-level tuning passes, each tuned alone in sequence (with the "
                     "heuristic passes they need as eval passes), then lowering with default "
                     "schedules.",
                     "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, "
                     "TuneCombineParallel(eval=[FuseOps]), "
                     "TuneLayout(eval=[FoldConstant, FuseOps]), TuneFusion, TuneCodegenFlags, "
                     "DeadCodeElimination, Legalize",
                     ""});
  registry.Register({"graph_joint",
                     "The same graph-level knobs tuned jointly: every layout is evaluated with "
                     "its own best combining, fusion and code generation flags.",
                     "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, "
                     "TuneLayout(eval=[FoldConstant, "
                     "TuneCombineParallel(eval=[TuneFusion(eval=[TuneCodegenFlags])])]), "
                     "DeadCodeElimination, Legalize",
                     ""});
  registry.Register(
      {"default_tuning",
       "The heuristic graph passes, then kernel schedule search for every kernel "
       "(TuneKernels: evolutionary search, XGBoost cost model, gradient task "
       "scheduler) under the run's trial budget.",
       std::string(kHeuristicGraphPasses) +
           ", PackMatmulWeights, PackConvWeights, FuseOps, DeadCodeElimination, TuneKernels",
       ""});
  registry.Register({"all_onednn",
                     "The heuristic graph passes with every subgraph oneDNN takes placed on "
                     "oneDNN (longest pattern match first); the rest is ours with default "
                     "schedules.",
                     "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, "
                     "CombineParallelMatmul, DenseToMatmul, "
                     "PlaceOnBackend(backend=\"onednn\"), PackMatmulWeights, PackConvWeights, "
                     "FuseOps, DeadCodeElimination, "
                     "Legalize",
                     ""});
  registry.Register({"placement_tuning",
                     "Backend placement by measurement (Collage-style: pattern pieces measured "
                     "alone, a dynamic program, then the best of it, all-own and all-backend "
                     "measured end to end), each candidate with its own kernels tuned.",
                     "InferType, SimplifyExpr, FoldConstant, FuseLayerNorm, FuseGelu, "
                     "CombineParallelMatmul, DenseToMatmul, "
                     "TuneBackendPlacement(eval=[PackMatmulWeights, PackConvWeights, FuseOps, "
                     "TuneKernels(trials=8, skip_tuned=1)]), "
                     "DeadCodeElimination",
                     ""});
  registry.Register({"sequential",
                     "Layout, then the convolution algorithm, then backend placement, then "
                     "kernels, each tuned alone: every decision is taken with the later ones at "
                     "their defaults.",
                     std::string(kGraphPrefix) + ", " + kSequentialChain, ""});
  registry.Register(
      {"joint",
       "Layout, convolution algorithm, backend placement and kernels tuned jointly, and never "
       "worse than `sequential` up to the noise: BestOf runs the sequential chain first under "
       "half of the trial budget, then the joint search under the rest (kernels the first "
       "tuned are reused), and keeps the faster of the two results, both confirmed in the same "
       "measurement rounds (the sequential one unless the joint one gains the minimum gain). "
       "The joint search: every layout is screened with each convolution algorithm that "
       "applies in it (direct, Winograd F(2x2,3x3) or F(4x4,3x3)) and its all-own and "
       "all-backend placements; in the best layout every 3x3 convolution is measured alone "
       "with each algorithm and placement, the uniform and per-convolution choices are "
       "screened again and the best gets its placement tuned (pieces measured, dynamic "
       "program), the whole-module placements are screened again and the best gets its "
       "kernels tuned with the rest of its budget; every decision is taken on end-to-end "
       "measurements and the best measured candidate wins.",
       std::string(kGraphPrefix) + ", BestOf(share=0.5, prefer=\"alternative\", alternative=" +
           ir::ToString(ir::AttrValue(std::string(kSequentialChain))) +
           ", eval=[TuneLayout(keep=1, eval=[FoldConstant, InferType, "
           "TuneConvAlgorithm(keep=1, per_conv=1, eval=[FoldConstant, InferType, "
           "TuneBackendPlacement(keep=1, eval=[PackMatmulWeights, PackConvWeights, FuseOps, "
           "TuneKernels(skip_tuned=1)])])]), DeadCodeElimination])",
       ""});
  registry.Register({"unscheduled",
                     "Lowering without any schedule: every kernel is its plain compute definition "
                     "(a baseline for measuring what schedules buy).",
                     "InferType, Legalize(default_schedule=0)", ""});
}

}  // namespace tandem::pipelines
