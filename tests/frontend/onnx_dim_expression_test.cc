// Dimension names that are arithmetic on symbols (frontend/onnx_dim_expression.h).
#include "frontend/onnx_dim_expression.h"

#include <gtest/gtest.h>

#include <limits>

namespace tandem::frontend {
namespace {

TEST(OnnxDimExpression, ArithmeticOnBoundSymbolsHasAValue) {
  std::map<std::string, int64_t> sizes = {
      {"past_sequence_length", 7}, {"sequence_length", 1}, {"batch", 3}};
  EXPECT_EQ(DimParamExtent("past_sequence_length + 1", sizes), 8);
  EXPECT_EQ(DimParamExtent("past_sequence_length+sequence_length", sizes), 8);
  EXPECT_EQ(DimParamExtent("2*batch - 1", sizes), 5);
  EXPECT_EQ(DimParamExtent("batch * (past_sequence_length + 2)", sizes), 27);
  EXPECT_EQ(DimParamExtent("-batch + 10", sizes), 7);
  EXPECT_EQ(DimParamExtent("batch", sizes), 3);
}

TEST(OnnxDimExpression, ExactNamesComeFirstAndUnboundOrMalformedHaveNone) {
  std::map<std::string, int64_t> sizes = {{"a", 2}, {"a + 1", 10}};
  EXPECT_EQ(DimParamExtent("a + 1", sizes), 10);  // a symbol bound under that exact name
  EXPECT_EQ(DimParamExtent("a + b", sizes), std::nullopt);
  EXPECT_EQ(DimParamExtent("unk__12", sizes), std::nullopt);
  EXPECT_EQ(DimParamExtent("a +", sizes), std::nullopt);
  EXPECT_EQ(DimParamExtent("(a + 1", sizes), std::nullopt);
  EXPECT_EQ(DimParamExtent("a / 2", sizes), std::nullopt);
  EXPECT_EQ(DimParamExtent("a * 9223372036854775807", sizes), std::nullopt);  // overflows
  EXPECT_EQ(DimParamExtent("99999999999999999999 + a", sizes), std::nullopt);
  EXPECT_EQ(DimParamExtent("", sizes), std::nullopt);
}

TEST(OnnxDimExpression, SymbolsOfAnExpressionAreItsNames) {
  EXPECT_EQ(DimParamSymbols("past_sequence_length + sequence_length"),
            (std::set<std::string>{"past_sequence_length", "sequence_length"}));
  EXPECT_EQ(DimParamSymbols("2*seq.len"), (std::set<std::string>{"seq.len"}));
  EXPECT_EQ(DimParamSymbols("batch"), (std::set<std::string>{"batch"}));
  // Not an expression: the whole name is one symbol.
  EXPECT_EQ(DimParamSymbols("a / 2"), (std::set<std::string>{"a / 2"}));
  EXPECT_EQ(DimParamSymbols("dim-name-"), (std::set<std::string>{"dim-name-"}));
}

}  // namespace
}  // namespace tandem::frontend
