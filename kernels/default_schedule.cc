#include "kernels/default_schedule.h"

#include <algorithm>
#include <thread>

#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "kernels/case_split.h"
#include "kernels/default_schedule/access_model.h"
#include "kernels/default_schedule/register_tiling.h"
#include "kernels/default_schedule/scheduler.h"
#include "kernels/schedule/block_analysis.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {

namespace default_schedule {

namespace {

// A producer is inlined into a reduction only when the reduction reads each of its elements
// at most this many times on average.
constexpr int64_t kMaxInlineReuse = 16;
// ... and a pad growing its input by at most kLargePadGrowth only when at most this many.
constexpr int64_t kMaxPaddedReuse = 4;
constexpr double kLargePadGrowth = 1.1;
// A producer is inlined into a spatial block only when that block's value reads it at most
// this many times (a transform reading a whole tile per element keeps its producer separate).
constexpr int64_t kMaxInlineLoads = 4;

// True when `producer` pads (or otherwise changes the extent of) only outer axes of its input,
// and `consumer` reads it contiguously along its own innermost spatial iterator (a channels-last
// depthwise convolution reading its padded image along the channels), or one element per
// aligned group of lanes (a channels-last grouped convolution, x[..., co / g * g + ci], whose
// vectors are one group wide: see PlanRegisterTile): inlined, the bounds check is then the same
// for a whole vector, one uniform select per load.
bool ReadAsUniformlyBoundedVectors(const ir::Block& producer, const ir::Block& consumer) {
  if (producer->writes.size() != 1) return false;
  const ir::Buffer& written = producer->writes[0].buffer;
  for (const ir::BufferRegion& r : producer->reads) {
    if (r.buffer->shape.empty() || written->shape.empty() ||
        r.buffer->shape.back() != written->shape.back()) {
      return false;
    }
  }
  AccessModel model(consumer);
  int innermost = InnermostSpatialAxis(consumer);
  if (!model.valid() || innermost < 0) return false;
  bool read = false;
  for (size_t l = 0; l < model.loads().size(); ++l) {
    if (model.load_exprs()[l]->buffer != written) continue;
    std::optional<int64_t> stride = model.Stride(model.loads()[l], innermost);
    bool grouped = !stride && model.LaneStride(model.loads()[l], innermost, kMinVectorTile) == 0;
    if (!grouped && stride != 1) return false;
    read = true;
  }
  return read;
}

// True when `block`'s value calls an intrinsic that costs tens of instructions per element
// (exp, log, sqrt, erf, tanh, sigmoid, pow; not abs, floor, ceil, round or checked_index).
bool CallsCostlyIntrinsic(const ir::Block& block) {
  bool costly = false;
  ir::VisitStmtExprs(block->body, [&](const ir::Expr& top) {
    ir::VisitExprTree(top, [&](const ir::Expr& e) {
      if (e->kind == ir::ExprKind::kCall && e->name != "abs" && e->name != "floor" &&
          e->name != "ceil" && e->name != "round" && e->name != "checked_index") {
        costly = true;
      }
    });
  });
  return costly;
}

}  // namespace

bool KeepsProducerSeparate(const ir::Block& producer, const ir::Block& consumer) {
  if (!IsReduction(consumer)) {
    if (LoadsOf(consumer, producer) > kMaxInlineLoads) return true;
    int64_t elements = 1;
    for (const ir::BufferRegion& w : producer->writes) elements = ir::NumElements(w.buffer->shape);
    return SpatialExtent(consumer) > kMaxInlineReuse * elements && CallsCostlyIntrinsic(producer);
  }
  // A pad read as vectors whose bounds hold for every lane costs one select per load inlined,
  // less than a pass of its own over the data whatever the reuse (channels-last depthwise).
  if (ReadAsUniformlyBoundedVectors(producer, consumer)) return false;
  // A reduction that reads each element once (sum of squares) or a few times (a depthwise
  // convolution's padding) takes the producer: a separate pass over the data would cost more
  // than recomputing it.
  int64_t iterations = SpatialExtent(consumer) * ReductionExtent(consumer);
  int64_t elements = 1;
  for (const ir::BufferRegion& w : producer->writes) elements = ir::NumElements(w.buffer->shape);
  if (iterations > kMaxInlineReuse * elements) return true;
  // Except a pad of a large image read a few times per element along its innermost axis (an
  // NCHW depthwise convolution's 9 taps along w): its own pass costs little more than a copy,
  // while inlined, every lane of every tap pays for a bounds select. On a small image the
  // border is a large part of the padded buffer and the selects are the cheaper (the pad
  // measured faster separate at 56x56 and 112x112, slower at 7x7).
  int64_t read_elements = 0;
  for (const ir::BufferRegion& r : producer->reads) {
    read_elements = std::max(read_elements, ir::NumElements(r.buffer->shape));
  }
  return iterations > kMaxPaddedReuse * elements &&
         static_cast<double>(elements) <= kLargePadGrowth * static_cast<double>(read_elements);
}

const ir::Block& BlockOf(const Schedule& s, const std::string& name) {
  return ir::As<ir::BlockRealizeNode>(GetBlockPath(s.function(), name).target)->block;
}

int64_t LargestDivisor(int64_t extent, int64_t limit) {
  for (int64_t d = std::min(extent, limit); d > 1; --d) {
    if (extent % d == 0) return d;
  }
  return 1;
}

DefaultScheduler::DefaultScheduler(const ir::KernelFunction& kernel,
                                   const DefaultScheduleOptions& options)
    : s_(kernel), options_(options) {
  if (options_.vector_lanes <= 0) options_.vector_lanes = 16;
  if (options_.vector_registers <= 0) options_.vector_registers = 32;
  threads_ = options.num_threads > 0
                 ? options.num_threads
                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Steps:
//   1. pointwise producers inlined (rule 1);
//   2. a row group (softmax, layer norm) row by row (rule 2a); else each reduction block:
//      register-tiled (rule 2), else split into per-lane partials (rule 3), else the simple
//      rule (rule 4); blocks may disappear on the way (an epilogue inlined into a write-back)
//      or be scheduled with their producer (an epilogue);
//   3. each spatial block left: a case split (rule 5), else vectorized and parallel (rule 6).
Schedule DefaultScheduler::Run() {
  // 1. Producers.
  InlinePointwiseProducers(/*keep_shared_costly_producers=*/true);
  // 2. Reductions.
  ScheduleRowGroup();
  for (const std::string& name : s_.BlockNames()) {
    if (done_.count(name) || !Exists(name)) continue;
    const ir::Block& b = BlockOf(s_, name);
    if (IsReduction(b) && !ScheduleRegisterTiled(name) && !ScheduleRowReduction(name)) {
      ScheduleReduction(name);
    }
  }
  // 3. Spatial blocks.
  for (const std::string& name : s_.BlockNames()) {
    if (done_.count(name) || !Exists(name)) continue;
    const ir::Block& b = BlockOf(s_, name);
    if (!IsReduction(b) && b->init == nullptr && !ScheduleCaseSplit(name)) {
      ScheduleSpatial(name);
    }
  }
  return s_;
}

bool DefaultScheduler::Exists(const std::string& name) const {
  return FindBlock(s_.function(), name).has_value();
}

// Inlines pointwise producers into their consumers, except into reductions that read an
// element more than once: those would recompute the producer once per reduction step and per
// register tile (and a pad or transpose inlined there turns contiguous vector loads into
// masked or gathered ones), so such producers stay separate stages.
//
// Steps, for each block that is neither a reduction nor a case split:
//   1. kept separate when some consumer would read it too often (KeepsProducerSeparate), or,
//      with `keep_shared_costly_producers`, when two or more blocks read a producer that calls
//      a costly intrinsic (a softmax's exponentials, summed and then normalized): inlined, each
//      would compute it again;
//   2. tried on the bare function first, so that the trace holds only steps that were applied;
//   3. inlined.
void DefaultScheduler::InlinePointwiseProducers(bool keep_shared_costly_producers) {
  for (const std::string& name : s_.BlockNames()) {
    if (!Exists(name)) continue;
    const ir::Block& b = BlockOf(s_, name);
    if (IsReduction(b) || !CaseSplitAxes(b).empty()) continue;
    // 1. Consumers.
    bool separate = false;
    int consumers = 0;
    for (const std::string& other : s_.BlockNames()) {
      if (other == name || !Exists(other)) continue;
      const ir::Block& c = BlockOf(s_, other);
      if (!ReadsAnyOf(c, b)) continue;
      ++consumers;
      if (KeepsProducerSeparate(b, c)) separate = true;
    }
    if (keep_shared_costly_producers && consumers > 1 && CallsCostlyIntrinsic(b)) separate = true;
    if (separate) continue;
    // 2. Trial.
    try {
      primitive::ComputeInline(s_.function(), name);
    } catch (const ScheduleError&) {
      continue;
    }
    // 3. Inlined.
    TrySteps(s_, [&] { s_.ComputeInline(s_.GetBlock(name)); });
  }
}

}  // namespace default_schedule

std::vector<size_t> DefaultScheduleOptions::DynamicIteratorsOf(const std::string& block) const {
  auto it = dynamic_iterators.find(block);
  return it == dynamic_iterators.end() ? std::vector<size_t>{} : it->second;
}

bool DefaultScheduleOptions::IsDynamic(const std::string& block, size_t iterator) const {
  std::vector<size_t> dynamic = DynamicIteratorsOf(block);
  return std::find(dynamic.begin(), dynamic.end(), iterator) != dynamic.end();
}

Schedule ApplyDefaultSchedule(const ir::KernelFunction& kernel,
                              const DefaultScheduleOptions& options) {
  return default_schedule::DefaultScheduler(kernel, options).Run();
}

}  // namespace tandem::kernels
