// Tests of the Einsum converter (onnx_einsum_converter.cc): equations imported and run on the
// reference interpreter against a direct evaluation of the sum written here (every assignment
// of the labels), the graph the attention contractions become, and the errors.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::Shape;
using ir::Tensor;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::ImportAndRun;
using testing::OnnxModel;
using testing::StringAttr;

// The einsum of `inputs` with explicit terms (no "..."): for every output index, the sum over
// all values of the other labels of the product of the operands' elements.
std::vector<double> DirectEinsum(const std::vector<std::string>& terms, const std::string& output,
                                 const std::vector<Tensor>& inputs, Shape* shape) {
  std::map<char, int64_t> extents;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t k = 0; k < terms[i].size(); ++k) extents[terms[i][k]] = inputs[i].shape()[k];
  }
  std::string labels;
  for (const auto& [c, e] : extents) {
    if (output.find(c) == std::string::npos) labels += c;
  }
  shape->clear();
  for (char c : output) shape->push_back(extents[c]);
  std::vector<double> result;
  std::map<char, int64_t> value;
  // Iterates output labels (row-major), then sums over the others.
  std::function<void(size_t)> outer = [&](size_t position) {
    if (position == output.size()) {
      double sum = 0;
      std::function<void(size_t)> inner = [&](size_t p) {
        if (p == labels.size()) {
          double product = 1;
          for (size_t i = 0; i < terms.size(); ++i) {
            int64_t flat = 0;
            for (size_t k = 0; k < terms[i].size(); ++k) {
              flat = flat * inputs[i].shape()[k] + value[terms[i][k]];
            }
            product *= inputs[i].GetDouble(flat);
          }
          sum += product;
          return;
        }
        for (value[labels[p]] = 0; value[labels[p]] < extents[labels[p]]; ++value[labels[p]])
          inner(p + 1);
      };
      inner(0);
      result.push_back(sum);
      return;
    }
    char c = output[position];
    for (value[c] = 0; value[c] < extents[c]; ++value[c]) outer(position + 1);
  };
  outer(0);
  return result;
}

// Imports Einsum(`equation`) over random inputs of `shapes` and compares with DirectEinsum of
// `terms` -> `output` (the equation with "..." and implicit outputs spelled out).
void ExpectEinsum(const std::string& equation, const std::vector<Shape>& shapes,
                  const std::vector<std::string>& terms, const std::string& output) {
  SCOPED_TRACE(equation);
  OnnxModel model;
  std::vector<std::string> names;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    model.Input(names.back(), shapes[i]);
    inputs.push_back(Tensor::Random(ir::TensorType{shapes[i], ir::DataType::kFloat32, ""}, i + 1));
  }
  model.Node("Einsum", names, {"y"}, {StringAttr("equation", equation)}).Output("y");
  Shape shape;
  std::vector<double> expected = DirectEinsum(terms, output, inputs, &shape);
  ExpectNear(ImportAndRun(model, inputs).at(0), shape, expected, 1e-5);
}

TEST(OnnxEinsumConvert, Contractions) {
  ExpectEinsum("bhid,bhjd->bhij", {{2, 3, 4, 5}, {2, 3, 6, 5}}, {"bhid", "bhjd"}, "bhij");
  ExpectEinsum("bhij,bhjd->bhid", {{2, 3, 4, 6}, {2, 3, 6, 5}}, {"bhij", "bhjd"}, "bhid");
  ExpectEinsum("bid,bjd->bij", {{2, 4, 3}, {2, 5, 3}}, {"bid", "bjd"}, "bij");
  ExpectEinsum("ij,jk", {{3, 4}, {4, 5}}, {"ij", "jk"}, "ik");
  ExpectEinsum("i,i->", {{6}, {6}}, {"i", "i"}, "");
  ExpectEinsum("i,j->ij", {{3}, {4}}, {"i", "j"}, "ij");
  ExpectEinsum("ij->ji", {{3, 4}}, {"ij"}, "ji");
  ExpectEinsum("ijk->j", {{2, 3, 4}}, {"ijk"}, "j");
  ExpectEinsum("ba", {{3, 4}}, {"ba"}, "ab");  // implicit: alphabetical, a transpose
  ExpectEinsum("ij,jk,kl->li", {{2, 3}, {3, 4}, {4, 5}}, {"ij", "jk", "kl"}, "li");
  ExpectEinsum("abc,cd->dab", {{2, 3, 4}, {4, 5}}, {"abc", "cd"}, "dab");
  ExpectEinsum("ij,kj->", {{3, 4}, {5, 4}}, {"ij", "kj"}, "");
  ExpectEinsum("...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, {"zij", "zjk"}, "zik");
  ExpectEinsum("bn...,bm...->bnm", {{2, 3, 4}, {2, 5, 4}}, {"bnz", "bmz"}, "bnm");
}

TEST(OnnxEinsumConvert, AttentionScoresAreOneMatmul) {
  OnnxModel model;
  model.Input("q", {1, 2, 4, 8}).Input("k", {1, 2, 6, 8});
  model.Node("Einsum", {"q", "k"}, {"y"}, {StringAttr("equation", "bhid,bhjd->bhij")}).Output("y");
  ir::IRModule module = model.Import();
  EXPECT_EQ(CountOp(module, "matmul"), 1);
  EXPECT_EQ(CountOp(module, "transpose"), 1);
  EXPECT_EQ(CountOp(module, "sum"), 0);
}

TEST(OnnxEinsumConvert, UnsupportedEquationsFailNamingThem) {
  auto import = [](const std::string& equation, const std::vector<Shape>& shapes) {
    OnnxModel model;
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      model.Input(names.back(), shapes[i]);
    }
    model.Node("Einsum", names, {"y"}, {StringAttr("equation", equation)}).Output("y");
    model.Import();
  };
  ExpectError([&] { import("ii->i", {{ 3, 3 }}); }, {"Einsum", "'ii->i'", "diagonals"});
  ExpectError([&] { import("ij,jk->ik", {{3, 4}, { 5, 6 }}); }, {"Einsum", "label 'j'", "4", "5"});
  ExpectError([&] { import("ij->ijk", {{ 3, 4 }}); }, {"Einsum", "'k'"});
  ExpectError([&] { import("ij,jk->ik", {{ 3, 4 }}); }, {"Einsum", "2 operand terms for 1 inputs"});
  ExpectError([&] { import("ijk->ik", {{ 3, 4 }}); }, {"Einsum", "does not match input 0"});
}

}  // namespace
}  // namespace tandem::frontend
