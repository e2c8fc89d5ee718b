// Instruction and Trace: the one record of decisions for both graph-level and kernel-level
// tuning.
//
// An Instruction is one step that transformed a program: its kind (a schedule primitive such as
// "split", a sampling instruction such as "sample_perfect_tile", or a graph-level knob such as
// "TuneLayout"), its inputs (names of random variables produced by earlier instructions: block,
// loop or value handles), its attributes (literal arguments) and the names of its outputs. A
// sampling or choosing instruction also carries its decision (a tile split, a category index,
// a compute location, the name of a Choice). An instruction may hold nested traces, each with a
// label: the kernel schedules a graph-level step chose (one trace per kernel workload, labelled
// by its hash), so that one trace holds every decision of a tuned model, at both levels, as
// instructions. A Trace is the ordered list of instructions
// applied to an input program. Replaying a trace on the same input reproduces the same output;
// replaying it with a changed decision gives the mutated program. Traces serialize to JSON
// (stable field order) and print as readable text for diffs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/attrs.h"

namespace tandem::ir {

struct Instruction;

// A trace inside an instruction, with what it is for (e.g. the workload hash of the kernel it
// schedules).
struct NestedTrace {
  std::string label;
  std::vector<Instruction> instructions;

  bool operator==(const NestedTrace& other) const;
};

struct Instruction {
  std::string kind;
  std::vector<std::string> inputs;
  Attrs attrs;
  std::vector<std::string> outputs;
  std::optional<AttrValue> decision;
  std::vector<NestedTrace> nested;  // in label order when made by Tandem's passes

  bool operator==(const Instruction& other) const = default;
};

inline bool NestedTrace::operator==(const NestedTrace& other) const {
  return label == other.label && instructions == other.instructions;
}

class Trace {
 public:
  Trace() = default;
  explicit Trace(std::vector<Instruction> instructions) : instructions_(std::move(instructions)) {}

  void Append(Instruction instruction) { instructions_.push_back(std::move(instruction)); }
  const std::vector<Instruction>& instructions() const { return instructions_; }
  std::vector<Instruction>& mutable_instructions() { return instructions_; }
  size_t size() const { return instructions_.size(); }
  bool empty() const { return instructions_.empty(); }

  // A copy whose instruction at `index` has decision `decision` (Error when the index is out of
  // range or the instruction has no decision).
  Trace WithDecision(size_t index, AttrValue decision) const;
  // A copy with the instructions after `count` dropped.
  Trace Prefix(size_t count) const;

  // JSON: {"version":1,"instructions":[{"kind":...,"inputs":[...],"attrs":{...},
  // "outputs":[...],"decision":...,"nested":[{"label":...,"instructions":[...]}]}, ...]}
  // ("nested" only when there are nested traces). Attribute values keep their kind (ints stay
  // ints, floats stay floats, even when integral).
  std::string ToJson() const;
  // Throws Error naming the instruction index and field for malformed JSON.
  static Trace FromJson(const std::string& json);

  // One line per instruction: `l2, l3 = split(l1) {factors=[4,8]} decision=[4,8]`; nested
  // traces follow their instruction, each under a `[label]` line, indented.
  std::string ToText() const;

  bool operator==(const Trace& other) const = default;

 private:
  std::vector<Instruction> instructions_;
};

// JSON conversion of attribute values, shared by every serializer in Tandem so that int/float
// kinds survive a round trip: ints and int lists are JSON integers; floats are
// {"f": number} (or {"f": "inf"/"-inf"/"nan"}); float lists {"fs": [...]}.
nlohmann::json AttrValueToJson(const AttrValue& value);
AttrValue AttrValueFromJson(const nlohmann::json& json);
nlohmann::json AttrsToJson(const Attrs& attrs);
Attrs AttrsFromJson(const nlohmann::json& json);

}  // namespace tandem::ir
