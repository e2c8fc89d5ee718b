#include "passes/instruments.h"

#include <fmt/format.h>

#include <ostream>

#include "ir/printer.h"
#include "ir/structural.h"

namespace tandem::passes {

void TimingInstrument::AfterPass(const Pass& pass, const ir::IRModule&, const ir::IRModule&,
                                 double seconds, int depth) {
  auto key = std::make_pair(pass.name(), depth);
  auto it = index_.find(key);
  if (it == index_.end()) {
    it = index_.emplace(key, rows_.size()).first;
    rows_.push_back(Row{pass.name(), depth, 0, 0});
  }
  Row& row = rows_[it->second];
  ++row.runs;
  row.seconds += seconds;
}

std::string TimingInstrument::Report() const {
  std::string out = fmt::format("{:<40} {:>6} {:>12}\n", "pass", "runs", "total ms");
  for (const Row& r : rows_) {
    out += fmt::format("{:<40} {:>6} {:>12.3f}\n", std::string(static_cast<size_t>(r.depth) * 2, ' ') + r.pass,
                       r.runs, r.seconds * 1e3);
  }
  return out;
}

PrintIRInstrument::PrintIRInstrument(std::ostream& out, std::set<std::string> before,
                                     std::set<std::string> after, bool only_on_change,
                                     int64_t max_constant_bytes)
    : out_(out),
      before_(std::move(before)),
      after_(std::move(after)),
      only_on_change_(only_on_change),
      max_constant_bytes_(max_constant_bytes) {}

void PrintIRInstrument::BeforePass(const Pass& pass, const ir::IRModule& module, int depth) {
  if (!before_.count(pass.name()) && !before_.count("*")) return;
  ir::PrintOptions options;
  options.max_constant_bytes = max_constant_bytes_;
  out_ << fmt::format("// ----- IR before {} (depth {}) -----\n", pass.name(), depth)
       << ir::PrintModule(module, options);
}

void PrintIRInstrument::AfterPass(const Pass& pass, const ir::IRModule& before,
                                  const ir::IRModule& after, double, int depth) {
  if (!after_.count(pass.name()) && !after_.count("*")) return;
  if (only_on_change_ && ir::StructuralEqual(before, after)) return;
  ir::PrintOptions options;
  options.max_constant_bytes = max_constant_bytes_;
  out_ << fmt::format("// ----- IR after {} (depth {}) -----\n", pass.name(), depth)
       << ir::PrintModule(after, options);
}

}  // namespace tandem::passes
