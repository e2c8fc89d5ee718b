// verify_gpu_launch: rejects a GPU program before it is built or measured when one of its
// launches (the statements of the root block's body, as backends/llvm/nvptx_codegen.h splits
// them) breaks the target's limits:
//   - more threads per block than the target allows (the product over threadIdx.x/y/z of the
//     largest extent of a loop bound to it);
//   - more shared memory per block than the target has: for each block writing a "shared"
//     buffer, the elements one thread block writes (the product of the extents of the loops that
//     hold only that block, index spatial iterators and are not bound to blockIdx), times the
//     element size, summed over the launch;
//   - more "local" elements per thread than a thread has registers (the same product over the
//     loops bound to no GPU index: a larger tile spills to memory);
//   - no loop bound to a GPU index although a block of the launch has more than one spatial
//     iteration (it would run on a single thread);
//   - a block writing a "shared" buffer under a guard (a split of its loops that does not divide
//     them), or a whole buffer at once: the code generator sizes shared buffers by exact
//     per-block tiles smaller than the buffer.
#include "ir/kernel/functor.h"
#include "ir/type.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

// The elements a block writes per thread block (`per_thread`: per thread): the product of the
// extents of its enclosing loops that hold only it and index one of its spatial iterators,
// leaving out loops bound to blockIdx (and, per thread, to threadIdx).
int64_t TileElements(const ir::KernelFunction& fn, const ir::BlockRealizeNode& realize,
                     bool per_thread) {
  StmtPath path = GetBlockPath(fn, realize.block->name);
  int64_t elements = 1;
  for (const ir::ForNode* loop : EnclosingLoops(path)) {
    if (ir::IsBlockIndex(loop->for_kind)) continue;
    if (per_thread && ir::IsThreadBinding(loop->for_kind)) continue;
    if (search::BlocksUnder(loop->body).size() != 1) continue;
    bool spatial = false;
    for (size_t k = 0; k < realize.iter_values.size(); ++k) {
      if (realize.block->iter_vars[k].kind == ir::IterKind::kSpatial &&
          ir::UsesVar(realize.iter_values[k], loop->loop_var)) {
        spatial = true;
      }
    }
    if (spatial) elements *= loop->extent;
  }
  return elements;
}

class VerifyGpuLaunch : public Postprocessor {
 public:
  explicit VerifyGpuLaunch(const SearchTarget& target) : target_(target) {}

  std::string name() const override { return "verify_gpu_launch"; }

  bool Apply(Schedule& s) const override {
    const ir::KernelFunction& fn = s.function();
    for (const ir::Stmt& launch : search::TopLevelStatements(fn)) {
      if (!CheckLaunch(fn, launch)) return false;
    }
    return true;
  }

 private:
  bool CheckLaunch(const ir::KernelFunction& fn, const ir::Stmt& launch) const {
    // Threads.
    int64_t extents[3] = {1, 1, 1};
    bool bound = false;
    ir::VisitStmtTree(launch, [&](const ir::Stmt& s) {
      const auto* loop = ir::As<ir::ForNode>(s);
      if (!loop || !ir::IsThreadBinding(loop->for_kind)) return;
      bound = true;
      if (ir::IsBlockIndex(loop->for_kind)) return;
      int64_t& extent = extents[ir::ThreadBindingAxis(loop->for_kind)];
      extent = std::max(extent, loop->extent);
    });
    if (extents[0] * extents[1] * extents[2] > target_.max_threads_per_block) return false;
    // Memory, and work left to one thread.
    int64_t shared_bytes = 0, local_elements = 0;
    bool work = false;
    for (const std::string& name : search::BlocksUnder(launch)) {
      const ir::BlockRealizeNode* realize = FindRealize(fn, name);
      if (!realize) continue;
      if (SpatialExtent(realize->block) > 1) work = true;
      for (const ir::BufferRegion& w : realize->block->writes) {
        if (w.buffer->scope == "shared") {
          // A guarded copy (a split that does not divide the tile) leaves the code generator no
          // exact tile to size the buffer by.
          int64_t always = 0;
          if (realize->predicate.defined() &&
              !(ir::AsConstInt(realize->predicate, &always) && always != 0)) {
            return false;
          }
          // A tile as large as the buffer is the same for every block and step: staging it
          // gains nothing, and the code generator moves into a block only buffers it shrinks.
          int64_t elements = TileElements(fn, *realize, false);
          int64_t whole = 1;
          for (int64_t extent : w.buffer->shape) whole *= extent;
          if (elements >= whole) return false;
          shared_bytes += elements * ir::SizeOf(w.buffer->dtype);
        } else if (w.buffer->scope == "local") {
          local_elements += TileElements(fn, *realize, true);
        }
      }
    }
    if (work && !bound) return false;
    return shared_bytes <= target_.max_shared_memory_per_block &&
           local_elements <= target_.max_registers_per_thread;
  }

  SearchTarget target_;
};

}  // namespace

PostprocessorPtr MakeVerifyGpuLaunch(const SearchTarget& target) {
  return std::make_shared<VerifyGpuLaunch>(target);
}

}  // namespace tandem::kernels
