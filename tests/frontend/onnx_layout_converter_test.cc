// Tests of the converters of DepthToSpace, SpaceToDepth and Tile (onnx_layout_converters.cc):
// every output element compared with the input element the ONNX definition names, computed
// with index arithmetic here.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::Tensor;
using testing::ExpectError;
using testing::ExpectNear;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::OnnxModel;
using testing::StringAttr;

// 0, 1, 2, ... of the given shape.
Tensor Iota(const ir::Shape& shape) {
  Tensor t(shape, ir::DataType::kFloat32);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, static_cast<double>(i));
  return t;
}

TEST(OnnxLayoutConvert, DepthToSpaceBothModes) {
  const int64_t n = 2, c = 8, h = 2, w = 3, b = 2, depth = c / (b * b);
  for (const std::string mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    OnnxModel model;
    model.Input("x", {n, c, h, w});
    model.Node("DepthToSpace", {"x"}, {"y"}, {IntAttr("blocksize", b), StringAttr("mode", mode)});
    model.Output("y");
    Tensor x = Iota({n, c, h, w});
    std::vector<double> expected;
    for (int64_t in = 0; in < n; ++in) {
      for (int64_t d = 0; d < depth; ++d) {
        for (int64_t y = 0; y < h * b; ++y) {
          for (int64_t xw = 0; xw < w * b; ++xw) {
            int64_t by = y % b, bx = xw % b;
            int64_t channel = mode == "DCR" ? (by * b + bx) * depth + d : d * b * b + by * b + bx;
            expected.push_back(static_cast<double>(((in * c + channel) * h + y / b) * w + xw / b));
          }
        }
      }
    }
    ExpectNear(ImportAndRun(model, {x}).at(0), {n, depth, h * b, w * b}, expected, 0);
  }
}

TEST(OnnxLayoutConvert, SpaceToDepthInvertsDepthToSpace) {
  const int64_t n = 1, c = 3, h = 4, w = 6, b = 2;
  OnnxModel model;
  model.Input("x", {n, c, h, w});
  model.Node("SpaceToDepth", {"x"}, {"y"}, {IntAttr("blocksize", b)});
  model.Node("DepthToSpace", {"y"}, {"z"}, {IntAttr("blocksize", b)});
  model.Output("y").Output("z");
  Tensor x = Iota({n, c, h, w});
  std::vector<Tensor> out = ImportAndRun(model, {x});
  std::vector<double> expected;
  for (int64_t channel = 0; channel < c * b * b; ++channel) {
    int64_t offset = channel / c, source = channel % c;
    for (int64_t y = 0; y < h / b; ++y) {
      for (int64_t xw = 0; xw < w / b; ++xw) {
        int64_t sy = y * b + offset / b, sx = xw * b + offset % b;
        expected.push_back(static_cast<double>((source * h + sy) * w + sx));
      }
    }
  }
  ExpectNear(out.at(0), {n, c * b * b, h / b, w / b}, expected, 0);
  ExpectNear(out.at(1), {n, c, h, w}, x.ToDoubles(), 0);

  OnnxModel uneven;
  uneven.Input("x", {1, 1, 3, 4}).Node("SpaceToDepth", {"x"}, {"y"}, {IntAttr("blocksize", 2)});
  uneven.Output("y");
  ExpectError([&] { uneven.Import(); }, {"SpaceToDepth", "multiples of blocksize"});
}

TEST(OnnxLayoutConvert, TileRepeatsEveryAxis) {
  OnnxModel model;
  model.Input("x", {2, 3}).Initializer("repeats", Tensor::FromInt64s({2}, {3, 2}));
  model.Node("Tile", {"x", "repeats"}, {"y"}).Output("y");
  Tensor x = Iota({2, 3});
  std::vector<double> expected;
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t j = 0; j < 6; ++j) expected.push_back(static_cast<double>((i % 2) * 3 + j % 3));
  }
  ExpectNear(ImportAndRun(model, {x}).at(0), {6, 6}, expected, 0);

  OnnxModel once;  // repeats of 1 everywhere: the input itself
  once.Input("x", {2, 3}).Initializer("repeats", Tensor::FromInt64s({2}, {1, 1}));
  once.Node("Tile", {"x", "repeats"}, {"y"}).Output("y");
  EXPECT_EQ(testing::CountCalls(once.Import()), 0);

  OnnxModel wrong;
  wrong.Input("x", {2, 3}).Initializer("repeats", Tensor::FromInt64s({1}, {2}));
  wrong.Node("Tile", {"x", "repeats"}, {"y"}).Output("y");
  ExpectError([&] { wrong.Import(); }, {"Tile", "one repeat count per axis"});
}

}  // namespace
}  // namespace tandem::frontend
