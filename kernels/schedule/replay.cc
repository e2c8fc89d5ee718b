// Trace replay: re-applies recorded instructions to a kernel function.
#include <fmt/format.h>

#include <charconv>
#include <functional>
#include <unordered_map>

#include "ir/error.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels {

using ir::Error;
using ir::Instruction;

namespace {

bool ParseLiteral(const std::string& s, int64_t* value) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

// Maps the handle names of the recorded trace to the handles of the replaying schedule.
class Replayer {
 public:
  explicit Replayer(Schedule& schedule) : schedule_(schedule) {}

  void Apply(const Instruction& inst) {
    const auto& in = inst.inputs;
    auto need = [&](size_t n) {
      if (in.size() < n) {
        throw Error(fmt::format("needs {} inputs but has {}", n, in.size()));
      }
    };
    const std::string& k = inst.kind;
    if (k == "get_block") {
      Bind(inst, 0, schedule_.GetBlock(inst.attrs.GetString("name")).name);
    } else if (k == "get_loops") {
      need(1);
      BindAll(inst, schedule_.GetLoops(Block(in[0])));
    } else if (k == "split") {
      need(2);
      std::vector<Factor> factors;
      for (size_t i = 1; i < in.size(); ++i) {
        int64_t literal;
        if (ParseLiteral(in[i], &literal)) {
          factors.emplace_back(literal);
        } else {
          factors.emplace_back(Value(in[i]));
        }
      }
      BindAll(inst, schedule_.Split(Loop(in[0]), factors));
    } else if (k == "fuse") {
      Bind(inst, 0, schedule_.Fuse(Loops(in)).name);
    } else if (k == "reorder") {
      schedule_.Reorder(Loops(in));
    } else if (k == "parallel") {
      need(1);
      schedule_.Parallel(Loop(in[0]));
    } else if (k == "vectorize") {
      need(1);
      schedule_.Vectorize(Loop(in[0]));
    } else if (k == "unroll") {
      need(1);
      schedule_.Unroll(Loop(in[0]));
    } else if (k == "bind") {
      need(1);
      schedule_.Bind(Loop(in[0]), inst.attrs.GetString("thread"));
    } else if (k == "annotate" && in.size() >= 2) {
      const std::string& key = inst.attrs.GetString("key");
      if (in[0].front() == 'b') {
        schedule_.Annotate(Block(in[0]), key, Value(in[1]));
      } else {
        schedule_.Annotate(Loop(in[0]), key, Value(in[1]));
      }
    } else if (k == "annotate") {
      need(1);
      const auto& value = inst.attrs.values().at("value");
      if (in[0].front() == 'b') {
        schedule_.Annotate(Block(in[0]), inst.attrs.GetString("key"), value);
      } else {
        schedule_.Annotate(Loop(in[0]), inst.attrs.GetString("key"), value);
      }
    } else if (k == "cache_read" || k == "cache_write") {
      need(1);
      int index = static_cast<int>(inst.attrs.GetInt("index"));
      const std::string& scope = inst.attrs.GetString("scope");
      BlockRV b = k == "cache_read" ? schedule_.CacheRead(Block(in[0]), index, scope)
                                    : schedule_.CacheWrite(Block(in[0]), index, scope);
      Bind(inst, 0, b.name);
    } else if (k == "set_scope") {
      need(1);
      schedule_.SetScope(Block(in[0]), static_cast<int>(inst.attrs.GetInt("index")),
                         inst.attrs.GetString("scope"));
    } else if (k == "compute_at") {
      need(2);
      schedule_.ComputeAt(Block(in[0]), Loop(in[1]));
    } else if (k == "reverse_compute_at") {
      need(2);
      schedule_.ReverseComputeAt(Block(in[0]), Loop(in[1]));
    } else if (k == "compute_inline") {
      need(1);
      schedule_.ComputeInline(Block(in[0]));
    } else if (k == "reverse_compute_inline") {
      need(1);
      schedule_.ReverseComputeInline(Block(in[0]));
    } else if (k == "rfactor") {
      need(1);
      Bind(inst, 0,
           schedule_.RFactor(Loop(in[0]), static_cast<int>(inst.attrs.GetInt("factor_axis"))).name);
    } else if (k == "decompose_reduction") {
      need(2);
      Bind(inst, 0, schedule_.DecomposeReduction(Block(in[0]), Loop(in[1])).name);
    } else if (k == "transform_layout") {
      need(1);
      schedule_.TransformLayout(Block(in[0]), static_cast<int>(inst.attrs.GetInt("buffer_index")),
                                inst.attrs.GetInt("is_write") != 0,
                                inst.attrs.GetString("src_layout"),
                                inst.attrs.GetString("dst_layout"));
    } else if (k == "sample_perfect_tile") {
      need(1);
      std::optional<std::vector<int64_t>> decision;
      if (inst.decision) decision = std::get<std::vector<int64_t>>(*inst.decision);
      std::optional<Schedule::PerfectTileSeed> seed;
      if (in.size() > 1) {
        seed = Schedule::PerfectTileSeed{Value(in[1]), inst.attrs.GetInt("seed_innermost")};
      }
      BindAll(inst, schedule_.SamplePerfectTile(
                        Loop(in[0]), static_cast<int>(inst.attrs.GetInt("n")),
                        inst.attrs.GetInt("max_innermost_factor"), decision, seed));
    } else if (k == "sample_categorical") {
      std::optional<int64_t> decision;
      if (inst.decision) decision = std::get<int64_t>(*inst.decision);
      Bind(inst, 0,
           schedule_
               .SampleCategorical(inst.attrs.GetInts("candidates"),
                                  inst.attrs.GetFloats("probabilities"), decision)
               .name);
    } else if (k == "sample_compute_location") {
      need(1);
      std::optional<int64_t> decision;
      if (inst.decision) decision = std::get<int64_t>(*inst.decision);
      Bind(inst, 0, schedule_.SampleComputeLocation(Block(in[0]), decision).name);
    } else if (k == "enter_postproc") {
      schedule_.EnterPostprocessing();
    } else {
      throw Error(fmt::format("unknown instruction kind '{}'", k));
    }
  }

 private:
  std::string Lookup(const std::string& name) const {
    auto it = names_.find(name);
    // "root" is the sentinel location, unless a sample_compute_location that recorded it now
    // decided on a loop (then the compute_at that follows must use that loop).
    if (it == names_.end() && name == "root") return name;
    if (it == names_.end()) {
      throw Error(fmt::format("handle '{}' is used before an instruction defines it", name));
    }
    return it->second;
  }
  BlockRV Block(const std::string& name) const { return BlockRV{Lookup(name)}; }
  LoopRV Loop(const std::string& name) const { return LoopRV{Lookup(name)}; }
  ExprRV Value(const std::string& name) const { return ExprRV{Lookup(name)}; }
  std::vector<LoopRV> Loops(const std::vector<std::string>& names) const {
    std::vector<LoopRV> out;
    for (const std::string& n : names) out.push_back(Loop(n));
    return out;
  }
  void Bind(const Instruction& inst, size_t index, const std::string& new_name) {
    if (index >= inst.outputs.size()) {
      throw Error(fmt::format("records {} outputs but produces more", inst.outputs.size()));
    }
    names_[inst.outputs[index]] = new_name;
  }
  template <typename RV>
  void BindAll(const Instruction& inst, const std::vector<RV>& rvs) {
    if (rvs.size() != inst.outputs.size()) {
      throw Error(fmt::format("records {} outputs but the program now gives {}",
                              inst.outputs.size(), rvs.size()));
    }
    for (size_t i = 0; i < rvs.size(); ++i) names_[inst.outputs[i]] = rvs[i].name;
  }

  Schedule& schedule_;
  std::unordered_map<std::string, std::string> names_;
};

}  // namespace

Schedule Schedule::Replay(const ir::KernelFunction& function, const ir::Trace& trace,
                          uint64_t seed) {
  Schedule schedule(function, seed);
  Replayer replayer(schedule);
  const auto& instructions = trace.instructions();
  for (size_t i = 0; i < instructions.size(); ++i) {
    try {
      replayer.Apply(instructions[i]);
    } catch (const Error& e) {
      // A primitive's refusal stays one (a rule or a sampled decision that turns out illegal).
      std::string message = fmt::format("replay of instruction {} ({}) on kernel '{}': {}", i,
                                        instructions[i].kind, function.name, e.message());
      if (dynamic_cast<const ScheduleError*>(&e)) throw ScheduleError(message);
      throw Error(message);
    } catch (const std::bad_variant_access&) {
      throw Error(
          fmt::format("replay of instruction {} ({}) on kernel '{}': the decision has the "
                      "wrong kind",
                      i, instructions[i].kind, function.name));
    } catch (const std::out_of_range&) {
      throw Error(
          fmt::format("replay of instruction {} ({}) on kernel '{}': a required attribute "
                      "is missing",
                      i, instructions[i].kind, function.name));
    }
  }
  return schedule;
}

}  // namespace tandem::kernels
