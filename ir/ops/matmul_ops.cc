#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterMatmulOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
