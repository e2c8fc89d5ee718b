// rewrite_epilogue_fusion: carries out the epilogue placement MultiLevelTiling sampled. The
// epilogue block names the tile level (kFuseLevelKey, a sampled value) and the tiled producer's
// loops carry their level (kTileLevelKey); the epilogue is computed under the producer's loop of
// that level. A placement that is not legal leaves the epilogue where it is.
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/tree_util.h"
#include "kernels/search/components.h"
#include "kernels/search/search_util.h"

namespace tandem::kernels {

namespace {

// The loop annotated with tile level `level` above a block that writes a buffer `reader` reads.
std::optional<std::pair<std::string, size_t>> LevelLoop(const ir::KernelFunction& fn,
                                                        const ir::Block& reader, int64_t level) {
  for (const ir::BufferRegion& read : reader->reads) {
    for (const auto* writer : BlocksWriting(fn, read.buffer)) {
      if (writer->block->name == reader->name) continue;
      StmtPath path = GetBlockPath(fn, writer->block->name);
      std::vector<const ir::ForNode*> loops = EnclosingLoops(path);
      for (size_t k = 0; k < loops.size(); ++k) {
        const ir::Attrs& a = loops[k]->annotations;
        if (a.Has(search::kTileLevelKey) && a.GetInt(search::kTileLevelKey) == level) {
          return std::make_pair(writer->block->name, k);
        }
      }
    }
  }
  return std::nullopt;
}

class RewriteEpilogueFusion : public Postprocessor {
 public:
  std::string name() const override { return "rewrite_epilogue_fusion"; }

  bool Apply(Schedule& s) const override {
    for (const std::string& name : s.BlockNames()) {
      const ir::BlockRealizeNode* realize = FindRealize(s.function(), name);
      if (!realize || !realize->block->annotations.Has(search::kFuseLevelKey)) continue;
      int64_t level = realize->block->annotations.GetInt(search::kFuseLevelKey);
      auto target = LevelLoop(s.function(), realize->block, level);
      if (!target) continue;
      search::TrySteps(s, [&] {
        BlockRV producer = s.GetBlock(target->first);
        LoopRV loop = s.GetLoops(producer)[target->second];
        s.ReverseComputeAt(s.GetBlock(name), loop);
      });
    }
    return true;
  }
};

}  // namespace

PostprocessorPtr MakeRewriteEpilogueFusion(const SearchTarget&) {
  return std::make_shared<RewriteEpilogueFusion>();
}

}  // namespace tandem::kernels
