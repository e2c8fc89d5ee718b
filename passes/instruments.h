// Pass instruments: per-pass timing and IR dumps (verification and crash reproducers are
// switches of the PassContext itself).
#pragma once

#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace tandem::passes {

// Accumulates wall time per pass name (nested runs included, indented by depth in the report).
class TimingInstrument : public PassInstrument {
 public:
  void AfterPass(const Pass& pass, const ir::IRModule& before, const ir::IRModule& after,
                 double seconds, int depth) override;
  struct Row {
    std::string pass;
    int depth = 0;
    int64_t runs = 0;
    double seconds = 0;
  };
  // Rows in first-run order.
  const std::vector<Row>& rows() const { return rows_; }
  // "pass  runs  total ms" table.
  std::string Report() const;

 private:
  std::vector<Row> rows_;
  std::map<std::pair<std::string, int>, size_t> index_;
};

// Prints the module before and/or after the named passes (all passes when the set is empty
// and `all` is true). Constants larger than `max_constant_bytes` are elided.
class PrintIRInstrument : public PassInstrument {
 public:
  PrintIRInstrument(std::ostream& out, std::set<std::string> before, std::set<std::string> after,
                    bool only_on_change = false, int64_t max_constant_bytes = 64);
  void BeforePass(const Pass& pass, const ir::IRModule& module, int depth) override;
  void AfterPass(const Pass& pass, const ir::IRModule& before, const ir::IRModule& after,
                 double seconds, int depth) override;

 private:
  std::ostream& out_;
  std::set<std::string> before_, after_;
  bool only_on_change_;
  int64_t max_constant_bytes_;
};

}  // namespace tandem::passes
