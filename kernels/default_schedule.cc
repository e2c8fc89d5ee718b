#include "kernels/default_schedule.h"

#include <functional>
#include <set>
#include <thread>

#include "ir/error.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {

namespace {

// Runs `step` on `s`; if it throws, restores `s` as it was (the step is skipped).
bool Try(Schedule& s, const std::function<void()>& step) {
  Schedule backup = s;
  try {
    step();
    return true;
  } catch (const ir::Error&) {
    s = backup;
    return false;
  }
}

const ir::Block& BlockOf(const Schedule& s, const std::string& name) {
  return ir::As<ir::BlockRealizeNode>(GetBlockPath(s.function(), name).target)->block;
}

bool IsReduction(const ir::Block& b) {
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kReduction) return true;
  }
  return false;
}

int64_t SpatialWork(const ir::Block& b) {
  int64_t n = 1;
  for (const ir::IterVar& iv : b->iter_vars) {
    if (iv.kind == ir::IterKind::kSpatial) n *= iv.extent;
  }
  return n;
}

// The largest divisor of `extent` that is at most `limit`.
int64_t LargestDivisor(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, limit); d > 1; --d) {
    if (extent % d == 0) return d;
  }
  return 1;
}

class DefaultScheduler {
 public:
  DefaultScheduler(const ir::KernelFunction& kernel, const DefaultScheduleOptions& options)
      : s_(kernel), options_(options) {
    threads_ = options.num_threads > 0 ? options.num_threads
                                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  Schedule Run() {
    InlinePointwiseProducers();
    for (const std::string& name : s_.BlockNames()) {
      if (done_.count(name)) continue;
      const ir::Block& b = BlockOf(s_, name);
      if (IsReduction(b)) {
        ScheduleReduction(name);
      }
    }
    for (const std::string& name : s_.BlockNames()) {
      if (done_.count(name)) continue;
      const ir::Block& b = BlockOf(s_, name);
      if (!IsReduction(b) && b->init == nullptr) ScheduleSpatial(name);
    }
    return s_;
  }

 private:
  void InlinePointwiseProducers() {
    for (const std::string& name : s_.BlockNames()) {
      const ir::Block& b = BlockOf(s_, name);
      if (IsReduction(b)) continue;
      // Trial on the bare function first so the trace holds only steps that were applied.
      try {
        primitive::ComputeInline(s_.function(), name);
      } catch (const ir::Error&) {
        continue;
      }
      Try(s_, [&] { s_.ComputeInline(s_.GetBlock(name)); });
    }
  }

  void ScheduleReduction(const std::string& name) {
    const ir::Block block = BlockOf(s_, name);
    size_t num_spatial = 0;
    for (const ir::IterVar& iv : block->iter_vars) num_spatial += iv.kind == ir::IterKind::kSpatial;
    if (num_spatial == 0) return;
    Try(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.size() != block->iter_vars.size()) throw ir::Error("unexpected loop nest");
      std::vector<LoopRV> spatial(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(num_spatial));
      std::vector<LoopRV> reduction(loops.begin() + static_cast<std::ptrdiff_t>(num_spatial), loops.end());
      // Vectorize the innermost spatial axis, register-tile the one before it.
      LoopRV last = spatial.back();
      int64_t lanes = LargestDivisor(s_.LoopExtent(last), options_.vector_lanes);
      std::vector<LoopRV> outer_spatial(spatial.begin(), spatial.end() - 1);
      std::vector<LoopRV> inner;
      LoopRV vec_outer = last;
      std::optional<LoopRV> vec;
      if (lanes >= 4) {
        auto parts = s_.Split(last, {-1, lanes});
        vec_outer = parts[0];
        vec = parts[1];
      }
      std::optional<LoopRV> tile;
      if (!outer_spatial.empty()) {
        LoopRV second = outer_spatial.back();
        int64_t t = LargestDivisor(s_.LoopExtent(second), 4);
        if (t > 1) {
          auto parts = s_.Split(second, {-1, t});
          outer_spatial.back() = parts[0];
          tile = parts[1];
        }
      }
      std::vector<LoopRV> order = outer_spatial;
      order.push_back(vec_outer);
      order.insert(order.end(), reduction.begin(), reduction.end());
      if (tile) order.push_back(*tile);
      if (vec) order.push_back(*vec);
      s_.Reorder(order);
      if (tile) s_.Unroll(*tile);
      if (vec) s_.Vectorize(*vec);
      if (!reduction.empty()) {
        Try(s_, [&] { s_.DecomposeReduction(b, reduction.front()); });
      }
      // Parallelize the outer spatial loops.
      std::vector<LoopRV> to_fuse = outer_spatial;
      to_fuse.push_back(vec_outer);
      LoopRV parallel = to_fuse.front();
      if (to_fuse.size() > 1) {
        Try(s_, [&] { parallel = s_.Fuse(to_fuse); });
      }
      if (SpatialWork(block) >= options_.parallel_min_work && threads_ > 1) {
        Try(s_, [&] { s_.Parallel(parallel); });
      }
      done_.insert(name);
      // A pointwise epilogue that reads this block's output runs right after each tile.
      for (const std::string& consumer : s_.BlockNames()) {
        if (consumer == name || done_.count(consumer)) continue;
        const ir::Block& c = BlockOf(s_, consumer);
        if (IsReduction(c) || c->init) continue;
        bool reads = false;
        for (const ir::BufferRegion& r : c->reads) {
          for (const ir::BufferRegion& w : block->writes) reads = reads || r.buffer == w.buffer;
        }
        if (!reads) continue;
        if (Try(s_, [&] { s_.ReverseComputeAt(s_.GetBlock(consumer), parallel); })) {
          done_.insert(consumer);
          ScheduleSpatialInner(consumer);
        }
      }
    });
  }

  // Vectorizes the innermost loop of an epilogue placed under another block's loop.
  void ScheduleSpatialInner(const std::string& name) {
    Try(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      LoopRV last = loops.back();
      int64_t lanes = LargestDivisor(s_.LoopExtent(last), options_.vector_lanes);
      if (lanes < 4) return;
      auto parts = s_.Split(last, {-1, lanes});
      s_.Vectorize(parts[1]);
    });
  }

  void ScheduleSpatial(const std::string& name) {
    const ir::Block block = BlockOf(s_, name);
    Try(s_, [&] {
      BlockRV b = s_.GetBlock(name);
      std::vector<LoopRV> loops = s_.GetLoops(b);
      if (loops.empty()) return;
      LoopRV fused = loops.size() > 1 ? s_.Fuse(loops) : loops[0];
      int64_t extent = s_.LoopExtent(fused);
      int64_t lanes = LargestDivisor(extent, options_.vector_lanes);
      LoopRV outer = fused;
      if (lanes >= 4) {
        auto parts = s_.Split(fused, {-1, lanes});
        outer = parts[0];
        s_.Vectorize(parts[1]);
      }
      if (extent >= options_.parallel_min_work && threads_ > 1) s_.Parallel(outer);
    });
    done_.insert(name);
  }

  Schedule s_;
  DefaultScheduleOptions options_;
  int threads_ = 1;
  std::set<std::string> done_;
};

}  // namespace

Schedule ApplyDefaultSchedule(const ir::KernelFunction& kernel,
                              const DefaultScheduleOptions& options) {
  return DefaultScheduler(kernel, options).Run();
}

}  // namespace tandem::kernels
