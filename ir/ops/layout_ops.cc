#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterLayoutOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
