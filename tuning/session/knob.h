// Choice and Knob: the graph-level decisions a tuning pass makes.
//
// A Choice is one named transformation of a module, with an optional constraint saying where it
// applies (e.g. "only when the model has convolutions"). A Knob is a named set of choices; a
// tuning pass builds a knob for the module in front of it and evaluates some of its choices.
// A decision is recorded in an ir::Trace as an Instruction whose decision is the choice's name,
// so graph-level and kernel-level decisions share one trace format and replay the same way.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/schedule/schedule.h"

namespace tandem::tuning {

struct Choice {
  std::string name;
  std::function<ir::IRModule(const ir::IRModule&)> apply;
  // Empty: the choice applies to every module.
  std::function<bool(const ir::IRModule&)> constraint;

  bool AppliesTo(const ir::IRModule& module) const { return !constraint || constraint(module); }
};

class Knob {
 public:
  // Choice names must be unique and non-empty (Error otherwise).
  Knob(std::string name, std::vector<Choice> choices);

  const std::string& name() const { return name_; }
  const std::vector<Choice>& choices() const { return choices_; }
  // Null when there is no such choice.
  const Choice* Find(const std::string& choice) const;
  // The names of the choices whose constraint holds on `module`, in declaration order.
  std::vector<std::string> ApplicableChoices(const ir::IRModule& module) const;
  // Applies the named choice. Error: unknown choice (listing the known ones) or a choice whose
  // constraint does not hold.
  ir::IRModule Apply(const ir::IRModule& module, const std::string& choice) const;
  // "TuneLayout: NCHW | NHWC | NCHW16c | none".
  std::string ToString() const;

 private:
  std::string name_;
  std::vector<Choice> choices_;
};

// Which of a knob's applicable choices a tuning pass evaluates.
//   exhaustive: all of them, in declaration order;
//   random:     `sample` of them drawn without replacement from the session's random state;
// and in both cases at most `max_candidates` (0: no cap), the first ones kept.
struct SearchStrategy {
  enum class Kind { kExhaustive, kRandom };
  Kind kind = Kind::kExhaustive;
  int64_t sample = 0;
  int64_t max_candidates = 0;

  // Parses "exhaustive" or "random" (Error otherwise).
  static Kind ParseKind(const std::string& text);
  std::vector<std::string> Select(const std::vector<std::string>& applicable,
                                  kernels::RandomState& random) const;
};

}  // namespace tandem::tuning
