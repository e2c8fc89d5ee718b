// libtandem_runtime's EnsureOnednnIsaFixed (onednn_isa_pinning.h). The runtime has no target to
// resolve: an exported model pins the instruction set its manifest records before it compiles
// its oneDNN subgraphs (ArtifactModel::Load); otherwise oneDNN keeps the machine's own, and this
// touches nothing.
#include "backends/onednn/onednn_isa_pinning.h"

namespace tandem::backends {

bool EnsureOnednnIsaFixed() {
  return true;
}

}  // namespace tandem::backends
