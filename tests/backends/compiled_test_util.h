// Helpers for the tests that check compiled kernels against the graph reference interpreter:
// comparison of results, and the diagnosis that names the layer at fault when they differ.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/kernel/stmt.h"
#include "ir/tensor.h"
#include "tests/kernels/kernel_text.h"

namespace tandem::testing {

// Uniform random inputs for `types`, one range per input (the last range repeats).
inline std::vector<ir::Tensor> RandomInputsInRanges(
    const std::vector<ir::TensorType>& types, const std::vector<std::pair<double, double>>& ranges,
    uint64_t seed) {
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < types.size(); ++i) {
    auto [low, high] = ranges[std::min(i, ranges.size() - 1)];
    inputs.push_back(ir::Tensor::Random(types[i], seed * 131 + i, low, high));
  }
  return inputs;
}

// Empty when `actual` computes `expected`: same shapes and dtypes, relative error below
// `tolerance` for floating-point outputs, bit-exact values for integer and bool outputs.
// Otherwise says which output differs and by how much.
inline std::string Mismatch(const std::vector<ir::Tensor>& actual,
                            const std::vector<ir::Tensor>& expected, double tolerance = 1e-5) {
  if (actual.size() != expected.size()) {
    return fmt::format("{} outputs instead of {}", actual.size(), expected.size());
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i].type().shape != expected[i].shape() || actual[i].dtype() != expected[i].dtype()) {
      return fmt::format("output {} is {} instead of {}", i, ir::ToString(actual[i].type()),
                         ir::ToString(expected[i].type()));
    }
    if (ir::IsFloat(expected[i].dtype())) {
      double error = ir::RelativeError(actual[i], expected[i]);
      if (!(error < tolerance)) {
        return fmt::format("output {}: relative error {:g} (max abs error {:g}), tolerance {:g}", i,
                           error, ir::MaxAbsoluteError(actual[i], expected[i]), tolerance);
      }
    } else {
      double error = ir::MaxAbsoluteError(actual[i], expected[i]);
      if (error != 0) return fmt::format("output {}: max abs error {:g} (must be exact)", i, error);
    }
  }
  return "";
}

// Runs `kernel` on the kernel interpreter; the mismatch against `expected`, or the error the
// interpreter reported (e.g. an out-of-bounds access).
inline std::string InterpretedMismatch(const ir::KernelFunction& kernel,
                                       const std::vector<ir::Tensor>& inputs,
                                       const std::vector<ir::Tensor>& expected, double tolerance) {
  try {
    return Mismatch(backends::RunKernelReference(kernel, inputs, true), expected, tolerance);
  } catch (const ir::Error& e) {
    return std::string("the kernel interpreter failed: ") + e.what();
  }
}

// Names the layer responsible when a compiled kernel does not compute `expected`, the graph
// reference result. `plain` is the kernel as lowered, `scheduled` the kernel that was compiled
// (the same as `plain` when unscheduled), `trace` the schedule's trace text. The kernel
// interpreter decides: if it already disagrees on `plain`, the compute definition is wrong; if
// it agrees on `plain` but not on `scheduled`, a schedule step is; if it agrees on `scheduled`,
// code generation is.
inline std::string DiagnoseMismatch(const ir::KernelFunction& plain,
                                    const ir::KernelFunction& scheduled, const std::string& trace,
                                    const std::vector<ir::Tensor>& inputs,
                                    const std::vector<ir::Tensor>& expected, double tolerance) {
  std::string plain_mismatch = InterpretedMismatch(plain, inputs, expected, tolerance);
  if (!plain_mismatch.empty()) {
    return "COMPUTE DEFINITION is wrong: the kernel interpreter on the lowered kernel differs "
           "from the graph reference (" +
           plain_mismatch + ")\n" + kernels::testing::KernelText(plain);
  }
  if (trace.empty()) {
    return "CODE GENERATION is wrong: the kernel interpreter on the same (unscheduled) kernel "
           "matches the graph reference\n" +
           kernels::testing::KernelText(scheduled);
  }
  std::string scheduled_mismatch = InterpretedMismatch(scheduled, inputs, expected, tolerance);
  if (!scheduled_mismatch.empty()) {
    return "SCHEDULE is wrong: the kernel interpreter matches on the lowered kernel but not on "
           "the scheduled one (" +
           scheduled_mismatch + ")\ntrace:\n" + trace + "\nscheduled kernel:\n" +
           kernels::testing::KernelText(scheduled);
  }
  return "CODE GENERATION is wrong: the kernel interpreter on the same scheduled kernel matches "
         "the graph reference\ntrace:\n" +
         trace + "\nscheduled kernel:\n" + kernels::testing::KernelText(scheduled);
}

// The functions of `assembly` (AT&T text from backends::EmitAssembly) that hold a gather whose
// vector registers are not all distinct, e.g. `vgatherqps (%rax,%ymm0,4), %xmm0 {%k1}`. x86
// raises #UD (SIGILL) on such an instruction; LLVM 16 can emit it for a gather whose index it
// made undef (see tests/backends/llvm/codegen_gather_test.cc). Running such code would kill the
// test program, so the compiled-program tests check for it first.
inline std::set<std::string> FunctionsWithInvalidGathers(const std::string& assembly) {
  std::set<std::string> out;
  std::istringstream lines(assembly);
  std::string line, function;
  while (std::getline(lines, line)) {
    if (!line.empty() && !std::isspace(static_cast<unsigned char>(line[0])) && line[0] != '.' &&
        line.back() == ':' && line.find('#') == std::string::npos) {
      function = line.substr(0, line.size() - 1);
      continue;
    }
    if (line.find("gather") == std::string::npos) continue;
    std::set<std::string> registers;
    bool repeated = false;
    for (size_t at = line.find("mm"); at != std::string::npos; at = line.find("mm", at + 2)) {
      if (at == 0 || std::string("xyz").find(line[at - 1]) == std::string::npos) continue;
      size_t end = at + 2;
      while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
      if (end == at + 2) continue;
      repeated = repeated || !registers.insert(line.substr(at + 2, end - at - 2)).second;
    }
    if (repeated) out.insert(function);
  }
  return out;
}

// True when `function` (a name from FunctionsWithInvalidGathers) is kernel `kernel` or a function
// outlined from it ("__tandem.<kernel>.parallel<n>").
inline bool BelongsToKernel(const std::string& function, const std::string& kernel) {
  return function == kernel || function.rfind("__tandem." + kernel + ".", 0) == 0;
}

}  // namespace tandem::testing
