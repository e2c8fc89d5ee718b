#include "ir/op_registry.h"

namespace tandem::ir::ops {

void RegisterPoolingOps(OpRegistry& registry) {}

}  // namespace tandem::ir::ops
