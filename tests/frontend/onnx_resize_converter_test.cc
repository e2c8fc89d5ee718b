// Tests of the Resize and Upsample converter (onnx_resize_converter.cc): models imported and run
// on the reference interpreter against a direct per-element interpolation written here from the
// ONNX definition (source coordinate, neighbours clamped to the edge, weights), and the graph
// each resize becomes.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::Tensor;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::FloatAttr;
using testing::ImportAndRun;
using testing::IntAttr;
using testing::OnnxModel;
using testing::StringAttr;

struct Mode {
  std::string mode, coordinates = "half_pixel", nearest = "round_prefer_floor";
  bool exclude_outside = false;
};

// `length` is the resized length: scale * in, not rounded, when scales are given (as in ONNX's
// reference), the output extent when sizes are.
double Source(const Mode& m, int64_t j, int64_t in, double scale, double length) {
  double x = static_cast<double>(j);
  if (m.coordinates == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m.coordinates == "pytorch_half_pixel") return length > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (m.coordinates == "align_corners") return length == 1 ? 0 : x * double(in - 1) / (length - 1);
  if (m.coordinates == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  return x / scale;  // asymmetric
}

// One line resized from in to out elements, straight from the definition.
std::vector<double> Interpolate(const Mode& m, const std::vector<double>& line, int64_t out,
                                double scale, double length) {
  auto in = static_cast<int64_t>(line.size());
  auto at = [&](int64_t i) { return line[static_cast<size_t>(std::clamp<int64_t>(i, 0, in - 1))]; };
  std::vector<double> result;
  for (int64_t j = 0; j < out; ++j) {
    double x = Source(m, j, in, scale, length);
    double f = std::floor(x), t = x - f;
    auto i = static_cast<int64_t>(f);
    if (m.mode == "nearest") {
      bool up = t != 0 && (m.nearest == "ceil" || (m.nearest == "round_prefer_floor" && t > 0.5) ||
                           (m.nearest == "round_prefer_ceil" && t >= 0.5));
      result.push_back(at(i + (up ? 1 : 0)));
    } else if (m.mode == "linear") {
      result.push_back(at(i) * (1 - t) + at(i + 1) * t);
    } else {
      const double a = -0.75;
      auto kernel = [a](double d) {
        d = std::abs(d);
        if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
        if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
        return 0.0;
      };
      double sum = 0, weights = 0;
      for (int64_t k = i - 1; k <= i + 2; ++k) {
        double w = kernel(x - static_cast<double>(k));
        if (m.exclude_outside && (k < 0 || k >= in)) w = 0;
        sum += w * at(k);
        weights += w;
      }
      result.push_back(m.exclude_outside ? sum / weights : sum);
    }
  }
  return result;
}

// A Resize of a [1, 1, in] input to `out` elements given by sizes (or by a scale when `scale`
// is positive), compared with Interpolate.
void ExpectResize1d(const Mode& m, int64_t in, int64_t out, double scale = 0) {
  SCOPED_TRACE(m.mode + " " + m.coordinates + " " + m.nearest + " " + std::to_string(in) + "->" +
               std::to_string(out));
  OnnxModel model;
  model.Input("x", {1, 1, in});
  model.Initializer("roi", Tensor::FromFloats({0}, {}));
  std::vector<onnx::AttributeProto> attrs = {
      StringAttr("mode", m.mode), StringAttr("coordinate_transformation_mode", m.coordinates),
      StringAttr("nearest_mode", m.nearest), IntAttr("exclude_outside", m.exclude_outside)};
  if (scale > 0) {
    model.Initializer("scales", Tensor::FromFloats({3}, {1, 1, static_cast<float>(scale)}));
    model.Node("Resize", {"x", "roi", "scales"}, {"y"}, attrs);
  } else {
    model.Initializer("scales", Tensor::FromFloats({0}, {}));
    model.Initializer("sizes", Tensor::FromInt64s({3}, {1, 1, out}));
    model.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, attrs);
  }
  double length = static_cast<double>(out);
  if (scale > 0) {
    length = static_cast<double>(static_cast<float>(scale)) * static_cast<double>(in);
  } else {
    scale = static_cast<double>(out) / static_cast<double>(in);
  }
  model.Output("y");
  Tensor x = Tensor::Random(ir::TensorType{{1, 1, in}, ir::DataType::kFloat32, ""}, 7);
  ExpectNear(ImportAndRun(model, {x}).at(0), {1, 1, out},
             Interpolate(m, x.ToDoubles(), out, scale, length), 1e-5);
}

TEST(OnnxResizeConvert, NearestModesAndCoordinates) {
  for (const char* coordinates : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                  "tf_half_pixel_for_nn"}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      Mode m{"nearest", coordinates, nearest};
      ExpectResize1d(m, 4, 8);
      ExpectResize1d(m, 5, 12);
      ExpectResize1d(m, 8, 3);
      ExpectResize1d(m, 6, 9, 1.5);
    }
  }
}

TEST(OnnxResizeConvert, LinearAndCubic) {
  for (const char* coordinates :
       {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    for (const char* mode : {"linear", "cubic"}) {
      Mode m{mode, coordinates};
      ExpectResize1d(m, 4, 8);
      ExpectResize1d(m, 5, 12);
      ExpectResize1d(m, 9, 4);
      ExpectResize1d(m, 4, 10, 2.5);
      ExpectResize1d(m, 3, 1);
    }
  }
  Mode exclude{"cubic", "half_pixel", "round_prefer_floor", true};
  ExpectResize1d(exclude, 4, 8);
  ExpectResize1d(exclude, 7, 3);
}

TEST(OnnxResizeConvert, IrregularIndexPatterns) {
  // 300 / 224 = 75 / 56: a period of 75 output positions, one strided slice per phase.
  ExpectResize1d({"nearest", "asymmetric", "floor"}, 224, 300);
  ExpectResize1d({"linear", "half_pixel"}, 224, 300);
  // 500 -> 503 with align_corners: source j * 499 / 502, a period of 502 > 256; one slice per
  // position.
  ExpectResize1d({"nearest", "align_corners", "round_prefer_ceil"}, 500, 503);
  OnnxModel large;
  large.Input("x", {1, 2000});
  large.Initializer("roi", Tensor::FromFloats({0}, {}));
  large.Initializer("scales", Tensor::FromFloats({0}, {}));
  large.Initializer("sizes", Tensor::FromInt64s({2}, {1, 2003}));
  large.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"},
             {StringAttr("coordinate_transformation_mode", "align_corners")});
  large.Output("y");
  ExpectError([&] { large.Import(); }, {"Resize", "2003 source positions", "period 256"});
}

TEST(OnnxResizeConvert, TwoAxesAreSeparable) {
  OnnxModel model;
  model.Input("x", {1, 2, 3, 4});
  model.Initializer("roi", Tensor::FromFloats({0}, {}));
  model.Initializer("scales", Tensor::FromFloats({4}, {1, 1, 2, 0.5f}));
  model.Node("Resize", {"x", "roi", "scales"}, {"y"}, {StringAttr("mode", "linear")});
  model.Output("y");
  Tensor x = Tensor::Random(ir::TensorType{{1, 2, 3, 4}, ir::DataType::kFloat32, ""}, 2);
  Mode m{"linear"};
  std::vector<double> v = x.ToDoubles(), expected;
  for (int64_t c = 0; c < 2; ++c) {
    std::vector<std::vector<double>> rows;  // width resized first
    for (int64_t h = 0; h < 3; ++h) {
      std::vector<double> row(v.begin() + (c * 3 + h) * 4, v.begin() + (c * 3 + h + 1) * 4);
      rows.push_back(Interpolate(m, row, 2, 0.5, 2));
    }
    std::vector<std::vector<double>> columns;
    for (int64_t w = 0; w < 2; ++w) {
      columns.push_back(Interpolate(m, {rows[0][w], rows[1][w], rows[2][w]}, 6, 2, 6));
    }
    for (int64_t h = 0; h < 6; ++h) {
      for (int64_t w = 0; w < 2; ++w) expected.push_back(columns[w][h]);
    }
  }
  ExpectNear(ImportAndRun(model, {x}).at(0), {1, 2, 6, 2}, expected, 1e-5);
}

TEST(OnnxResizeConvert, UpsampleByAnIntegerFactorIsOneBroadcast) {
  for (int opset : {9, 13}) {
    SCOPED_TRACE(opset);
    OnnxModel model(opset);
    model.Input("x", {1, 1, 2, 3});
    model.Initializer("scales", Tensor::FromFloats({4}, {1, 1, 2, 3}));
    if (opset == 9) {
      model.Node("Upsample", {"x", "scales"}, {"y"});
    } else {
      model.Initializer("roi", Tensor::FromFloats({0}, {}));
      model.Node("Resize", {"x", "roi", "scales"}, {"y"},
                 {StringAttr("coordinate_transformation_mode", "asymmetric"),
                  StringAttr("nearest_mode", "floor")});
    }
    model.Output("y");
    Tensor x = Tensor::FromFloats({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
    std::vector<double> expected;
    for (int64_t h = 0; h < 4; ++h) {
      for (int64_t w = 0; w < 9; ++w)
        expected.push_back(static_cast<double>(h / 2 * 3 + w / 3 + 1));
    }
    ExpectNear(ImportAndRun(model, {x}).at(0), {1, 1, 4, 9}, expected, 0);
    ir::IRModule module = model.Import();
    EXPECT_EQ(CountOp(module, "strided_slice") + CountOp(module, "concat") + CountOp(module, "pad"),
              0);
  }
}

TEST(OnnxResizeConvert, UnsupportedModesFailNamingThem) {
  OnnxModel model;
  model.Input("x", {1, 4});
  model.Initializer("roi", Tensor::FromFloats({4}, {0, 0, 1, 1}));
  model.Initializer("scales", Tensor::FromFloats({2}, {1, 2}));
  model.Node("Resize", {"x", "roi", "scales"}, {"y"},
             {StringAttr("coordinate_transformation_mode", "tf_crop_and_resize"),
              FloatAttr("extrapolation_value", 0)});
  model.Output("y");
  ExpectError([&] { model.Import(); }, {"Resize", "tf_crop_and_resize"});
  OnnxModel both;
  both.Input("x", {1, 4});
  both.Initializer("roi", Tensor::FromFloats({0}, {}));
  both.Initializer("scales", Tensor::FromFloats({2}, {1, 2}));
  both.Initializer("sizes", Tensor::FromInt64s({2}, {1, 8}));
  both.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}).Output("y");
  ExpectError([&] { both.Import(); }, {"Resize", "exactly one of scales and sizes"});
}

}  // namespace
}  // namespace tandem::frontend
