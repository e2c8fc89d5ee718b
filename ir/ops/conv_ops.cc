#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterConvolutionOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
