// The one place where every built-in pass is registered under its stable name. A pass lives in
// passes/heuristic/<snake_case_name>.cc or passes/tuning/<snake_case_name>.cc.
#include "passes/pass_registry.h"

namespace tandem::passes {

void RegisterInferType(PassRegistry& registry);
void RegisterFoldConstant(PassRegistry& registry);
void RegisterDeadCodeElimination(PassRegistry& registry);
void RegisterLegalize(PassRegistry& registry);
void RegisterFuseOps(PassRegistry& registry);
void RegisterSimplifyExpr(PassRegistry& registry);
void RegisterFuseLayerNorm(PassRegistry& registry);
void RegisterFuseGelu(PassRegistry& registry);
void RegisterCombineParallelConv2D(PassRegistry& registry);
void RegisterCombineParallelMatmul(PassRegistry& registry);
void RegisterDenseToMatmul(PassRegistry& registry);
void RegisterPackMatmulWeights(PassRegistry& registry);
void RegisterPackConvWeights(PassRegistry& registry);
void RegisterAnnotateBackend(PassRegistry& registry);
void RegisterConvertLayout(PassRegistry& registry);
void RegisterTuneLayout(PassRegistry& registry);
void RegisterTuneCombineParallel(PassRegistry& registry);
void RegisterTuneFusion(PassRegistry& registry);
void RegisterTuneCodegenFlags(PassRegistry& registry);
void RegisterTuneKernels(PassRegistry& registry);
void RegisterPlaceOnBackend(PassRegistry& registry);
void RegisterTuneBackendPlacement(PassRegistry& registry);
void RegisterTuneConvAlgorithm(PassRegistry& registry);
void RegisterBestOf(PassRegistry& registry);

void RegisterAllPasses(PassRegistry& registry) {
  RegisterInferType(registry);
  RegisterFoldConstant(registry);
  RegisterDeadCodeElimination(registry);
  RegisterLegalize(registry);
  RegisterFuseOps(registry);
  RegisterSimplifyExpr(registry);
  RegisterFuseLayerNorm(registry);
  RegisterFuseGelu(registry);
  RegisterCombineParallelConv2D(registry);
  RegisterCombineParallelMatmul(registry);
  RegisterDenseToMatmul(registry);
  RegisterPackMatmulWeights(registry);
  RegisterPackConvWeights(registry);
  RegisterAnnotateBackend(registry);
  RegisterConvertLayout(registry);
  RegisterTuneLayout(registry);
  RegisterTuneCombineParallel(registry);
  RegisterTuneFusion(registry);
  RegisterTuneCodegenFlags(registry);
  RegisterTuneKernels(registry);
  RegisterPlaceOnBackend(registry);
  RegisterTuneBackendPlacement(registry);
  RegisterTuneConvAlgorithm(registry);
  RegisterBestOf(registry);
}

}  // namespace tandem::passes
