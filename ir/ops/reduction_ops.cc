#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterReductionOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
