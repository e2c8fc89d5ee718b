#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterNormalizationOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
