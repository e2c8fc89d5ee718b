// Golden kernel-text checks for the tests of the search space's rules and postprocessors
// (tests/kernels/search/{rules,postprocessors}/): kernels read from tests/kernels/search/data/,
// a fixed target (256-bit vectors, 4 cores) so that nothing depends on the host, sampling
// decisions set by the test rather than drawn, and a comparison of the printed result with an
// expected file that prints a line diff on mismatch.
//
// Regenerating: run kernels_tests with `--update_golden` (e.g.
// `build/tests/kernels_tests --gtest_filter='MultiLevelTiling*' --update_golden`); the expected
// files of the tests that ran are rewritten in the source tree (review the diff before committing).
// Without the flag a mismatch fails, prints the diff and writes the actual text to a file whose
// path it prints.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/schedule/schedule.h"
#include "kernels/search/search_space.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels::testing {

// The target every golden test uses: 8 f32 lanes (256-bit vectors), 4 cores, the default
// innermost factor bound and unroll depths.
inline SearchTarget GoldenTarget() {
  SearchTarget target;
  target.vector_lanes = 8;
  target.num_cores = 4;
  target.max_innermost_factor = 64;
  target.unroll_depths = {0, 16, 64, 512};
  return target;
}

inline std::string GoldenDataPath(const std::string& file) {
  return std::string(TANDEM_SOURCE_DIR) + "/tests/kernels/search/data/" + file;
}

inline bool UpdateGolden() {
  for (const std::string& arg : ::testing::internal::GetArgvs()) {
    if (arg == "--update_golden") return true;
  }
  return false;
}

inline std::string ReadGoldenFile(const std::string& file) {
  std::ifstream in(GoldenDataPath(file));
  if (!in.good()) return {};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The kernel in data file `file` (fails the test when it does not parse).
inline ir::KernelFunction ReadKernel(const std::string& file) {
  std::string text = ReadGoldenFile(file);
  EXPECT_FALSE(text.empty()) << "cannot read " << GoldenDataPath(file);
  try {
    return ir::ParseKernel(text, file);
  } catch (const ir::Error& e) {
    ADD_FAILURE() << file << " does not parse: " << e.what();
    return {};
  }
}

inline std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A unified-style line diff of `expected` and `actual` (longest common subsequence, hunks with
// three lines of context).
inline std::string LineDiff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = SplitLines(expected);
  std::vector<std::string> b = SplitLines(actual);
  size_t n = a.size();
  size_t m = b.size();
  std::vector<std::vector<size_t>> lcs(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  // Edit script: ' ' kept, '-' only expected, '+' only actual.
  std::vector<std::pair<char, std::string>> script;
  size_t i = 0;
  size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      script.emplace_back(' ', a[i++]);
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      script.emplace_back('-', a[i++]);
    } else {
      script.emplace_back('+', b[j++]);
    }
  }
  constexpr size_t kContext = 3;
  std::vector<bool> shown(script.size(), false);
  for (size_t k = 0; k < script.size(); ++k) {
    if (script[k].first == ' ') continue;
    size_t from = k >= kContext ? k - kContext : 0;
    size_t to = std::min(script.size(), k + kContext + 1);
    for (size_t s = from; s < to; ++s) shown[s] = true;
  }
  std::string out = "--- expected\n+++ actual\n";
  size_t line_a = 1;
  size_t line_b = 1;
  bool in_hunk = false;
  for (size_t k = 0; k < script.size(); ++k) {
    if (shown[k] && !in_hunk)
      out += "@@ -" + std::to_string(line_a) + " +" + std::to_string(line_b) + " @@\n";
    in_hunk = shown[k];
    if (shown[k]) out += script[k].first + script[k].second + "\n";
    line_a += script[k].first != '+';
    line_b += script[k].first != '-';
  }
  return out;
}

// The golden text of a result: a comment naming what it is and how to regenerate it, the
// trace that made it (one comment line per instruction) and the kernel text.
inline std::string GoldenText(const std::string& what, const ir::Trace* trace,
                              const ir::KernelFunction& kernel) {
  std::string out = "// " + what + "\n";
  out +=
      "// Generated by kernels_tests; regenerate with --update_golden "
      "(tests/kernels/search/golden.h).\n";
  if (trace) {
    out += "// trace:\n";
    for (const std::string& line : SplitLines(trace->ToText())) out += "//   " + line + "\n";
  }
  return out + ir::PrintKernel(kernel);
}

// Expects the golden text of `kernel` to equal data file `file` and the file to parse back to a
// kernel structurally equal to `kernel`. With --update_golden, rewrites the file instead.
inline void ExpectGolden(const std::string& file, const std::string& what,
                         const ir::KernelFunction& kernel, const ir::Trace* trace = nullptr) {
  std::string actual = GoldenText(what, trace, kernel);
  std::string expected = ReadGoldenFile(file);
  if (UpdateGolden()) {
    if (actual != expected) {
      std::ofstream out(GoldenDataPath(file));
      out << actual;
      ASSERT_TRUE(out.good()) << "cannot write " << GoldenDataPath(file);
      std::cout << "[ golden   ] updated " << GoldenDataPath(file) << "\n";
    }
    return;
  }
  if (actual != expected) {
    std::string saved = ::testing::TempDir() + file;
    std::ofstream(saved) << actual;
    ADD_FAILURE() << "the result differs from tests/kernels/search/data/" << file
                  << (expected.empty() ? " (missing or empty)" : "") << ":\n"
                  << LineDiff(expected, actual) << "The actual text is in " << saved
                  << "; if the change is intended, rerun with --update_golden or cp " << saved
                  << " " << GoldenDataPath(file) << "\nActual text:\n"
                  << actual;
    return;
  }
  ir::KernelFunction parsed = ir::ParseKernel(expected, file);
  EXPECT_TRUE(ir::StructuralEqual(parsed, kernel)) << ir::StructuralDiff(parsed, kernel);
}

// Expects `after` to compute what `before` computes on random inputs (reference interpreter,
// two seeds).
inline void ExpectSameOutputs(const ir::KernelFunction& before, const ir::KernelFunction& after) {
  for (uint64_t seed : {3, 4}) {
    EXPECT_LT(CompareKernels(before, after, seed), 1e-5) << ir::PrintKernel(after);
  }
}

// `trace` with the decisions of its sampling instructions replaced, in trace order, by
// `decisions` (their number must match), replayed on `kernel`.
inline Schedule ReplayWithDecisions(const ir::KernelFunction& kernel, const ir::Trace& trace,
                                    const std::vector<ir::AttrValue>& decisions) {
  ir::Trace fixed = trace;
  size_t next = 0;
  for (size_t k = 0; k < fixed.size(); ++k) {
    if (!fixed.instructions()[k].decision) continue;
    EXPECT_LT(next, decisions.size()) << "more sampling instructions than decisions:\n"
                                      << trace.ToText();
    if (next >= decisions.size()) break;
    fixed = fixed.WithDecision(k, decisions[next++]);
  }
  EXPECT_EQ(next, decisions.size()) << "fewer sampling instructions than decisions:\n"
                                    << trace.ToText();
  return Schedule::Replay(kernel, fixed);
}

// A schedule of `kernel` (fixed seed) and a handle to its block `block`: what a rule is applied to.
struct RuleInput {
  Schedule schedule;
  BlockRV block;
};
inline RuleInput AtBlock(const ir::KernelFunction& kernel, const std::string& block) {
  Schedule s(kernel, /*seed=*/1);
  BlockRV rv = s.GetBlock(block);
  return {s, rv};
}

// Expects a rule's result to be the one schedule it was given, unchanged: same program, no step
// added to the trace.
inline void ExpectUnchanged(const std::vector<Schedule>& result, const Schedule& input) {
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(ir::PrintKernel(result[0].function()), ir::PrintKernel(input.function()));
  EXPECT_EQ(result[0].trace(), input.trace()) << result[0].trace().ToText();
}

}  // namespace tandem::kernels::testing
