// Checked application of schedule primitives for the schedule fuzzer (schedule_fuzzer.h): counts
// of applied and rejected primitives, and StepChecker, which runs one primitive and checks that
// a rejected one (an ir::Error) left the schedule's function and trace unchanged.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"

namespace tandem::kernels::testing {

struct KindCounts {
  int applied = 0;
  int rejected = 0;
};

// Totals over a fuzz run. Transformations count in `applied`/`rejected`; handle and sampling
// instructions only in `by_kind`.
struct FuzzCounts {
  int schedules = 0;
  int applied = 0;
  int rejected = 0;
  std::map<std::string, KindCounts> by_kind;
  // Rejection messages with names and numbers blanked out, with how often each occurred.
  std::map<std::string, int> reasons;
};

// The message with quoted names replaced by '_' and digits by '#', so that rejections of the
// same kind aggregate.
inline std::string RejectionPattern(const std::string& message) {
  std::string out;
  bool quoted = false;
  for (char c : message) {
    if (c == '\'') {
      quoted = !quoted;
      out += quoted ? "'_" : "'";
    } else if (!quoted) {
      out += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
    }
  }
  return out;
}

// Runs primitives on a schedule, counting them in a FuzzCounts.
class StepChecker {
 public:
  // `after_step` (optional) runs after every successful transformation with its kind and the
  // function before it.
  using StepHook = std::function<void(const std::string& kind, const ir::KernelFunction& before)>;

  StepChecker(Schedule& schedule, FuzzCounts& counts, StepHook after_step = {})
      : s_(schedule), counts_(counts), after_step_(std::move(after_step)) {}

  // Runs one primitive; returns false when it was rejected with an ir::Error (after checking
  // that it changed nothing). Transformations count in the totals and in applied(); handle and
  // sampling instructions (`transformation` false) only per kind. Other exceptions propagate.
  template <typename F>
  bool Try(const std::string& kind, F&& apply, bool transformation = true) {
    ir::KernelFunction before = s_.function();
    size_t trace_size = s_.trace().size();
    try {
      apply();
    } catch (const ir::Error& e) {
      ++counts_.by_kind[kind].rejected;
      if (transformation) {
        ++counts_.rejected;
        ++counts_.reasons[kind + ": " + RejectionPattern(e.message())];
      }
      EXPECT_TRUE(ir::StructuralEqual(before, s_.function()))
          << kind << " was rejected but changed the function: " << e.what();
      EXPECT_EQ(trace_size, s_.trace().size())
          << kind << " was rejected but changed the trace: " << e.what();
      return false;
    }
    ++counts_.by_kind[kind].applied;
    if (transformation) {
      ++counts_.applied;
      applied_.push_back(kind);
      if (after_step_) after_step_(kind, before);
    }
    return true;
  }

  // The transformations applied so far, in order.
  const std::vector<std::string>& applied() const { return applied_; }

 private:
  Schedule& s_;
  FuzzCounts& counts_;
  StepHook after_step_;
  std::vector<std::string> applied_;
};

}  // namespace tandem::kernels::testing
