#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterElementwiseOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
