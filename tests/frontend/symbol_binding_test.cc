// ParseSymbolBinding: "NAME=SIZE" bindings of ONNX symbolic dimensions from the command line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "frontend/onnx_importer.h"
#include "tests/common/expect_error.h"

namespace tandem::frontend {
namespace {

TEST(SymbolBinding, ParsesNameAndSize) {
  std::map<std::string, int64_t> symbols;
  ParseSymbolBinding("batch=1", "--symbol", symbols);
  ParseSymbolBinding("past_sequence + 1=0", "--symbol", symbols);
  ParseSymbolBinding("batch=4", "--symbol", symbols);  // the last binding of a name wins
  EXPECT_EQ(symbols, (std::map<std::string, int64_t>{{"batch", 4}, {"past_sequence + 1", 0}}));
}

TEST(SymbolBinding, MalformedBindingsNameTheOption) {
  std::map<std::string, int64_t> symbols;
  for (const char* text : {"batch", "=3", "batch=", "batch=-1", "batch=2x", "batch=1e3"}) {
    testing::ExpectErrorContaining([&] { ParseSymbolBinding(text, "--bind", symbols); },
                                   fmt::format("--bind '{}' must look like NAME=SIZE", text));
  }
  EXPECT_TRUE(symbols.empty());
}

}  // namespace
}  // namespace tandem::frontend
