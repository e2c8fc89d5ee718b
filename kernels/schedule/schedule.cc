#include "kernels/schedule/schedule.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "kernels/schedule/primitives.h"
#include "kernels/schedule/schedule_error.h"
#include "kernels/schedule/tree_util.h"

namespace tandem::kernels {

using ir::Error;

uint64_t RandomState::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t RandomState::Uniform(int64_t n) {
  if (n <= 0) throw Error(fmt::format("cannot draw a uniform integer below {}", n));
  uint64_t un = static_cast<uint64_t>(n);
  uint64_t limit = UINT64_MAX - UINT64_MAX % un;  // rejection keeps it unbiased
  uint64_t x;
  do {
    x = Next();
  } while (x >= limit);
  return static_cast<int64_t>(x % un);
}

double RandomState::UniformReal() {
  return static_cast<double>(Next() >> 11) * 0x1.0p-53;
}

Schedule::Schedule(ir::KernelFunction function, uint64_t seed)
    : original_(function), function_(std::move(function)), random_(seed) {}

std::string Schedule::NewName(char prefix) {
  return fmt::format("{}{}", prefix, next_name_++);
}

BlockRV Schedule::NewBlock(const std::string& block_name) {
  BlockRV rv{NewName('b')};
  blocks_[rv.name] = block_name;
  return rv;
}

LoopRV Schedule::NewLoop(const ir::Var& var) {
  LoopRV rv{NewName('l')};
  loops_[rv.name] = var;
  return rv;
}

ExprRV Schedule::NewValue(int64_t value) {
  ExprRV rv{NewName('v')};
  values_[rv.name] = value;
  return rv;
}

void Schedule::Record(std::string kind, std::vector<std::string> inputs, ir::Attrs attrs,
                      std::vector<std::string> outputs, std::optional<ir::AttrValue> decision) {
  trace_.Append(ir::Instruction{std::move(kind), std::move(inputs), std::move(attrs),
                                std::move(outputs), std::move(decision)});
}

const std::string& Schedule::BlockName(const BlockRV& block) const {
  auto it = blocks_.find(block.name);
  if (it == blocks_.end()) throw Error(fmt::format("unknown block handle '{}'", block.name));
  return it->second;
}

const ir::Var& Schedule::LoopVar(const LoopRV& loop) const {
  auto it = loops_.find(loop.name);
  if (it == loops_.end()) throw Error(fmt::format("unknown loop handle '{}'", loop.name));
  return it->second;
}

int64_t Schedule::Value(const ExprRV& value) const {
  auto it = values_.find(value.name);
  if (it == values_.end()) throw Error(fmt::format("unknown value handle '{}'", value.name));
  return it->second;
}

int64_t Schedule::LoopExtent(const LoopRV& loop) const {
  return ir::As<ir::ForNode>(GetLoopPath(function_, LoopVar(loop)).target)->extent;
}

std::vector<std::string> Schedule::BlockNames() const {
  std::vector<std::string> names;
  for (const auto* b : AllBlocks(function_)) {
    if (b->block->name != "root") names.push_back(b->block->name);
  }
  return names;
}

BlockRV Schedule::GetBlock(const std::string& name) {
  GetBlockPath(function_, name);  // throws when missing
  BlockRV rv = NewBlock(name);
  Record("get_block", {}, ir::Attrs{{"name", name}}, {rv.name});
  return rv;
}

std::vector<LoopRV> Schedule::GetLoops(const BlockRV& block) {
  StmtPath path = GetBlockPath(function_, BlockName(block));
  std::vector<LoopRV> loops;
  std::vector<std::string> names;
  for (const auto& a : path.ancestors) {
    if (const auto* loop = ir::As<ir::ForNode>(a)) {
      loops.push_back(NewLoop(loop->loop_var));
      names.push_back(loops.back().name);
    }
  }
  Record("get_loops", {block.name}, {}, names);
  return loops;
}

std::vector<LoopRV> Schedule::Split(const LoopRV& loop, const std::vector<Factor>& factors) {
  std::vector<int64_t> values;
  std::vector<std::string> inputs{loop.name};
  for (const Factor& f : factors) {
    values.push_back(f.rv ? Value(*f.rv) : f.literal);
    inputs.push_back(f.rv ? f.rv->name : std::to_string(f.literal));
  }
  std::vector<ir::Var> vars;
  function_ = primitive::Split(function_, LoopVar(loop), values, &vars);
  std::vector<LoopRV> out;
  std::vector<std::string> names;
  for (const ir::Var& v : vars) {
    out.push_back(NewLoop(v));
    names.push_back(out.back().name);
  }
  Record("split", inputs, {}, names);
  return out;
}

LoopRV Schedule::Fuse(const std::vector<LoopRV>& loops) {
  std::vector<ir::Var> vars;
  std::vector<std::string> inputs;
  for (const LoopRV& l : loops) {
    vars.push_back(LoopVar(l));
    inputs.push_back(l.name);
  }
  ir::Var fused;
  function_ = primitive::Fuse(function_, vars, &fused);
  LoopRV out = NewLoop(fused);
  Record("fuse", inputs, {}, {out.name});
  return out;
}

void Schedule::Reorder(const std::vector<LoopRV>& order) {
  std::vector<ir::Var> vars;
  std::vector<std::string> inputs;
  for (const LoopRV& l : order) {
    vars.push_back(LoopVar(l));
    inputs.push_back(l.name);
  }
  function_ = primitive::Reorder(function_, vars);
  Record("reorder", inputs, {}, {});
}

void Schedule::Parallel(const LoopRV& loop) {
  function_ = primitive::SetLoopKind(function_, LoopVar(loop), ir::ForKind::kParallel);
  Record("parallel", {loop.name}, {}, {});
}

void Schedule::Vectorize(const LoopRV& loop) {
  function_ = primitive::SetLoopKind(function_, LoopVar(loop), ir::ForKind::kVectorized);
  Record("vectorize", {loop.name}, {}, {});
}

void Schedule::Unroll(const LoopRV& loop) {
  function_ = primitive::SetLoopKind(function_, LoopVar(loop), ir::ForKind::kUnrolled);
  Record("unroll", {loop.name}, {}, {});
}

void Schedule::Bind(const LoopRV& loop, const std::string& thread) {
  ir::ForKind kind = ir::ForKind::kSerial;
  for (ir::ForKind k : ir::kAllForKinds) {
    if (ir::IsThreadBinding(k) && ir::ToString(k) == thread) kind = k;
  }
  if (!ir::IsThreadBinding(kind)) {
    throw ScheduleError(
        fmt::format("cannot bind loop '{}' to '{}': not a thread index (one of "
                    "blockIdx.x/y/z, threadIdx.x/y/z)",
                    loop.name, thread));
  }
  function_ = primitive::SetLoopKind(function_, LoopVar(loop), kind);
  Record("bind", {loop.name}, ir::Attrs{{"thread", thread}}, {});
}

void Schedule::Annotate(const LoopRV& loop, const std::string& key, const ir::AttrValue& value) {
  function_ = primitive::AnnotateLoop(function_, LoopVar(loop), key, value);
  Record("annotate", {loop.name}, ir::Attrs{{"key", key}, {"value", value}}, {});
}

void Schedule::Annotate(const BlockRV& block, const std::string& key, const ir::AttrValue& value) {
  function_ = primitive::AnnotateBlock(function_, BlockName(block), key, value);
  Record("annotate", {block.name}, ir::Attrs{{"key", key}, {"value", value}}, {});
}

void Schedule::Annotate(const LoopRV& loop, const std::string& key, const ExprRV& value) {
  function_ = primitive::AnnotateLoop(function_, LoopVar(loop), key, Value(value));
  Record("annotate", {loop.name, value.name}, ir::Attrs{{"key", key}}, {});
}

void Schedule::Annotate(const BlockRV& block, const std::string& key, const ExprRV& value) {
  function_ = primitive::AnnotateBlock(function_, BlockName(block), key, Value(value));
  Record("annotate", {block.name, value.name}, ir::Attrs{{"key", key}}, {});
}

void Schedule::EnterPostprocessing() {
  Record("enter_postproc", {}, {}, {});
}

BlockRV Schedule::CacheRead(const BlockRV& block, int read_index, const std::string& scope) {
  std::string new_block;
  function_ = primitive::CacheRead(function_, BlockName(block), read_index, scope, &new_block);
  BlockRV out = NewBlock(new_block);
  Record("cache_read", {block.name}, ir::Attrs{{"index", int64_t{read_index}}, {"scope", scope}},
         {out.name});
  return out;
}

BlockRV Schedule::CacheWrite(const BlockRV& block, int write_index, const std::string& scope) {
  std::string new_block;
  function_ = primitive::CacheWrite(function_, BlockName(block), write_index, scope, &new_block);
  BlockRV out = NewBlock(new_block);
  Record("cache_write", {block.name}, ir::Attrs{{"index", int64_t{write_index}}, {"scope", scope}},
         {out.name});
  return out;
}

void Schedule::SetScope(const BlockRV& block, int write_index, const std::string& scope) {
  function_ = primitive::SetScope(function_, BlockName(block), write_index, scope);
  Record("set_scope", {block.name}, ir::Attrs{{"index", int64_t{write_index}}, {"scope", scope}},
         {});
}

void Schedule::ComputeAt(const BlockRV& block, const LoopRV& loop) {
  if (!IsRoot(loop)) function_ = primitive::ComputeAt(function_, BlockName(block), LoopVar(loop));
  Record("compute_at", {block.name, loop.name}, {}, {});
}

void Schedule::ReverseComputeAt(const BlockRV& block, const LoopRV& loop) {
  if (!IsRoot(loop)) {
    function_ = primitive::ReverseComputeAt(function_, BlockName(block), LoopVar(loop));
  }
  Record("reverse_compute_at", {block.name, loop.name}, {}, {});
}

void Schedule::ComputeInline(const BlockRV& block) {
  function_ = primitive::ComputeInline(function_, BlockName(block));
  Record("compute_inline", {block.name}, {}, {});
}

void Schedule::ReverseComputeInline(const BlockRV& block) {
  function_ = primitive::ReverseComputeInline(function_, BlockName(block));
  Record("reverse_compute_inline", {block.name}, {}, {});
}

BlockRV Schedule::RFactor(const LoopRV& loop, int factor_axis) {
  std::string rf_block;
  function_ = primitive::RFactor(function_, LoopVar(loop), factor_axis, &rf_block);
  BlockRV out = NewBlock(rf_block);
  Record("rfactor", {loop.name}, ir::Attrs{{"factor_axis", int64_t{factor_axis}}}, {out.name});
  return out;
}

BlockRV Schedule::DecomposeReduction(const BlockRV& block, const LoopRV& loop) {
  std::string init_block;
  function_ =
      primitive::DecomposeReduction(function_, BlockName(block), LoopVar(loop), &init_block);
  BlockRV out = NewBlock(init_block);
  Record("decompose_reduction", {block.name, loop.name}, {}, {out.name});
  return out;
}

void Schedule::TransformLayout(const BlockRV& block, int buffer_index, bool is_write,
                               const std::string& src_layout, const std::string& dst_layout) {
  function_ = primitive::TransformLayout(function_, BlockName(block), buffer_index, is_write,
                                         src_layout, dst_layout);
  Record("transform_layout", {block.name},
         ir::Attrs{{"buffer_index", int64_t{buffer_index}},
                   {"is_write", int64_t{is_write ? 1 : 0}},
                   {"src_layout", src_layout},
                   {"dst_layout", dst_layout}},
         {});
}

std::vector<int64_t> SamplePerfectTileFactors(RandomState& random, int64_t extent, int n,
                                              int64_t max_innermost_factor) {
  if (n < 1) throw Error(fmt::format("sample_perfect_tile needs n >= 1, not {}", n));
  if (extent < 1) throw Error(fmt::format("sample_perfect_tile of a loop of extent {}", extent));
  std::vector<int64_t> primes;
  int64_t rest = extent;
  for (int64_t p = 2; p * p <= rest; ++p) {
    while (rest % p == 0) {
      primes.push_back(p);
      rest /= p;
    }
  }
  if (rest > 1) primes.push_back(rest);
  std::vector<int64_t> factors;
  for (int attempt = 0; attempt < 64; ++attempt) {
    factors.assign(static_cast<size_t>(n), 1);
    for (int64_t p : primes) factors[static_cast<size_t>(random.Uniform(n))] *= p;
    if (max_innermost_factor <= 0 || factors.back() <= max_innermost_factor) return factors;
  }
  // Move prime factors out of the innermost position until it fits (always possible: 1 fits).
  for (int64_t p : primes) {
    if (factors.back() <= max_innermost_factor) break;
    if (factors.back() % p == 0) {
      factors.back() /= p;
      factors[static_cast<size_t>(random.Uniform(std::max(1, n - 1)))] *= p;
    }
  }
  return factors;
}

std::vector<ExprRV> Schedule::SamplePerfectTile(const LoopRV& loop, int n,
                                                int64_t max_innermost_factor,
                                                std::optional<std::vector<int64_t>> decision,
                                                std::optional<PerfectTileSeed> seed) {
  int64_t extent = LoopExtent(loop);
  if (seed && seed->innermost < 1) {
    throw Error(
        fmt::format("sample_perfect_tile seed {} is not a positive factor", seed->innermost));
  }
  std::vector<int64_t> factors;
  if (decision) {
    factors = *decision;
    int64_t product = 1;
    for (int64_t f : factors) product *= f > 0 ? f : 0;
    if (static_cast<int>(factors.size()) != n || product != extent ||
        (max_innermost_factor > 0 && factors.back() > max_innermost_factor)) {
      throw Error(
          fmt::format("sample_perfect_tile decision [{}] is not a factorization of extent "
                      "{} into {} parts with innermost <= {}",
                      fmt::join(factors, ","), extent, n, max_innermost_factor));
    }
  } else if (seed && n > 1 && Value(seed->enabled) != 0) {
    int64_t limit = std::min(seed->innermost, extent);
    if (max_innermost_factor > 0) limit = std::min(limit, max_innermost_factor);
    int64_t innermost = 1;
    for (int64_t d = limit; d > 1; --d) {
      if (extent % d == 0) {
        innermost = d;
        break;
      }
    }
    factors = SamplePerfectTileFactors(random_, extent / innermost, n - 1, 0);
    factors.push_back(innermost);
  } else {
    factors = SamplePerfectTileFactors(random_, extent, n, max_innermost_factor);
  }
  std::vector<ExprRV> out;
  std::vector<std::string> names;
  for (int64_t f : factors) {
    out.push_back(NewValue(f));
    names.push_back(out.back().name);
  }
  ir::Attrs attrs{{"n", int64_t{n}}, {"max_innermost_factor", max_innermost_factor}};
  std::vector<std::string> inputs{loop.name};
  if (seed) {
    inputs.push_back(seed->enabled.name);
    attrs.Set("seed_innermost", seed->innermost);
  }
  Record("sample_perfect_tile", std::move(inputs), std::move(attrs), names, factors);
  return out;
}

ExprRV Schedule::SampleCategorical(const std::vector<int64_t>& candidates,
                                   const std::vector<double>& probabilities,
                                   std::optional<int64_t> decision) {
  if (candidates.empty() || candidates.size() != probabilities.size()) {
    throw Error("sample_categorical needs as many probabilities as candidates (at least one)");
  }
  int64_t index;
  if (decision) {
    index = *decision;
    if (index < 0 || index >= static_cast<int64_t>(candidates.size())) {
      throw Error(fmt::format("sample_categorical decision {} is out of range for {} candidates",
                              index, candidates.size()));
    }
  } else {
    double total = 0;
    for (double p : probabilities) total += p > 0 ? p : 0;
    double x = random_.UniformReal() * total;
    index = static_cast<int64_t>(candidates.size()) - 1;
    for (size_t i = 0; i < probabilities.size(); ++i) {
      double p = probabilities[i] > 0 ? probabilities[i] : 0;
      if (x < p) {
        index = static_cast<int64_t>(i);
        break;
      }
      x -= p;
    }
  }
  ExprRV out = NewValue(candidates[static_cast<size_t>(index)]);
  Record("sample_categorical", {},
         ir::Attrs{{"candidates", candidates}, {"probabilities", probabilities}}, {out.name},
         index);
  return out;
}

LoopRV Schedule::SampleComputeLocation(const BlockRV& block, std::optional<int64_t> decision) {
  std::vector<ir::Var> locations = primitive::ComputeAtLocations(function_, BlockName(block));
  int64_t index;
  if (decision) {
    index = *decision;
    if (index < -1 || index >= static_cast<int64_t>(locations.size())) {
      throw Error(fmt::format("sample_compute_location decision {} is out of range ({} locations)",
                              index, locations.size()));
    }
  } else {
    index = random_.Uniform(static_cast<int64_t>(locations.size()) + 1) - 1;
  }
  LoopRV out;
  if (index < 0) {
    out = LoopRV{"root"};
  } else {
    out = NewLoop(locations[static_cast<size_t>(index)]);
  }
  Record("sample_compute_location", {block.name}, {}, {out.name}, index);
  return out;
}

bool TrySteps(Schedule& schedule, const std::function<void()>& step) {
  Schedule backup = schedule;
  try {
    step();
    return true;
  } catch (const ScheduleError&) {
    schedule = backup;
    return false;
  } catch (...) {
    schedule = backup;
    throw;
  }
}

}  // namespace tandem::kernels
