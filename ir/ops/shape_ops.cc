#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterShapeOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
