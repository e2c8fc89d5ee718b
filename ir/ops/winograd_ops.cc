// The Winograd convolution ops: a 3x3, stride-1 conv2d (NCHW data, OIHW weight, groups 1) is
//   winograd_output_transform(batch_matmul(winograd_input_transform(data),
//                                          winograd_weight_transform(weight)))
// with tiles of m x m outputs (m = 2 or 4, a = m + 2). TuneConvAlgorithm writes this chain; each
// op is an ordinary graph op with its own kernel, so kernel search and fusion apply to it. The
// input and output transforms also take NHWC activations (attribute layout="NHWC", what
// ConvertLayout sets when it moves a network into NHWC): then neither transform transposes.
//   winograd_weight_transform  weight [K, C, 3, 3]            -> U [a*a, C, K]
//   winograd_input_transform   data [N, C, H, W]              -> V [a*a, P, C]
//   batch_matmul               V x U                          -> M [a*a, P, K]
//   winograd_output_transform  M [a*a, P, K]                  -> [N, K, OH, OW]
// where OH = H + pad_top + pad_bottom - 2 (OW alike), tiles are numbered p = (n * tilesH + th) *
// tilesW + tw with tilesH = ceil(OH / m), and element e = xi * a + nu of a transformed tile is
// row xi, column nu.
#include "ir/ops/winograd.h"

#include <fmt/format.h>

#include "ir/checked_math.h"
#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {

const WinogradMatrices& Winograd(int64_t tile) {
  static const WinogradMatrices f2{2,
                                   4,
                                   {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
                                   {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
                                   {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  static const WinogradMatrices f4{
      4,
      6,
      {{4, 0, -5, 0, 1, 0},
       {0, -4, -4, 1, 1, 0},
       {0, 4, -4, -1, 1, 0},
       {0, -2, -1, 2, 1, 0},
       {0, 2, -1, -2, 1, 0},
       {0, 4, 0, -5, 0, 1}},
      {{1.0 / 4, 0, 0},
       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
       {1.0 / 24, 1.0 / 12, 1.0 / 6},
       {1.0 / 24, -1.0 / 12, 1.0 / 6},
       {0, 0, 1}},
      {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
  if (tile == 2) return f2;
  if (tile == 4) return f4;
  throw Error(
      fmt::format("tile must be 2 or 4 (Winograd F(2x2,3x3) or F(4x4,3x3)) but is {}", tile));
}

namespace {

void CheckFloat(const TensorType& t, const std::string& role, const std::string& layout = "") {
  if (t.dtype != DataType::kFloat32 && t.dtype != DataType::kFloat64) {
    throw Error(fmt::format("{} must be f32 or f64 but is {}", role, ToString(t.dtype)));
  }
  if (!t.layout.empty() && t.layout != layout) {
    throw Error(layout.empty()
                    ? fmt::format("{} must have no layout tag but is tagged '{}'", role, t.layout)
                    : fmt::format("{} is tagged with layout '{}' but the op's layout is '{}'", role,
                                  t.layout, layout));
  }
}

// True for the NHWC data layout, false for NCHW; anything else is an Error.
bool ReadNhwc(const Attrs& attrs) {
  const std::string& layout = attrs.GetString("layout");
  if (layout != "NCHW" && layout != "NHWC") {
    throw Error(fmt::format("layout must be NCHW or NHWC but is '{}'", layout));
  }
  return layout == "NHWC";
}

void CheckShapeRank(const TensorType& t, size_t rank, const std::string& role,
                    const std::string& expected) {
  if (t.rank() != static_cast<int64_t>(rank)) {
    throw Error(fmt::format("{} must have rank {} ({}) but has shape {}", role, rank, expected,
                            ShapeToString(t.shape)));
  }
  for (int64_t extent : t.shape) {
    if (extent < 1) {
      throw Error(fmt::format("{} must have positive extents but has shape {}", role,
                              ShapeToString(t.shape)));
    }
  }
}

Tensor FromDoubles(const std::vector<double>& values, const Type& output) {
  Tensor result(output.tensor());
  for (size_t i = 0; i < values.size(); ++i) result.SetDouble(static_cast<int64_t>(i), values[i]);
  return result;
}

// ---- winograd_weight_transform ----

Type InferWeightTransform(const std::vector<Type>& inputs, const Attrs& attrs) {
  const WinogradMatrices& w = Winograd(attrs.GetInt("tile"));
  const TensorType& weight = TensorOperand(inputs, 0, "weight");
  CheckShapeRank(weight, 4, "weight", "[K, C, 3, 3]");
  CheckFloat(weight, "weight");
  if (weight.shape[2] != 3 || weight.shape[3] != 3) {
    throw Error(fmt::format("weight must be a 3x3 kernel [K, C, 3, 3] but has shape {}",
                            ShapeToString(weight.shape)));
  }
  return TensorType{{w.size * w.size, weight.shape[1], weight.shape[0]}, weight.dtype, ""};
}

std::vector<Tensor> WeightTransformReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                             const Type& output) {
  const WinogradMatrices& w = Winograd(attrs.GetInt("tile"));
  const Shape& shape = inputs.at(0).shape();
  int64_t k_count = shape[0], c_count = shape[1], a = w.size;
  std::vector<double> g = inputs[0].ToDoubles();
  std::vector<double> out(static_cast<size_t>(a * a * c_count * k_count), 0.0);
  for (int64_t k = 0; k < k_count; ++k) {
    for (int64_t c = 0; c < c_count; ++c) {
      const double* filter = g.data() + (k * c_count + c) * 9;
      for (int64_t xi = 0; xi < a; ++xi) {
        for (int64_t nu = 0; nu < a; ++nu) {
          double sum = 0;
          for (int64_t i = 0; i < 3; ++i) {
            for (int64_t j = 0; j < 3; ++j) sum += w.g[xi][i] * filter[i * 3 + j] * w.g[nu][j];
          }
          out[static_cast<size_t>(((xi * a + nu) * c_count + c) * k_count + k)] = sum;
        }
      }
    }
  }
  return {FromDoubles(out, output)};
}

// ---- winograd_input_transform ----

struct InputGeometry {
  int64_t n, c, h, w;
  int64_t top, left;
  int64_t out_h, out_w;      // convolution result extents
  int64_t tiles_h, tiles_w;  // tiles per axis
};

InputGeometry ReadInputGeometry(const TensorType& data, const Attrs& attrs) {
  bool nhwc = ReadNhwc(attrs);
  CheckShapeRank(data, 4, "data", nhwc ? "[N, H, W, C]" : "[N, C, H, W]");
  CheckFloat(data, "data", nhwc ? "NHWC" : "");
  CheckLength(attrs, "padding", 4);
  const std::vector<int64_t>& padding = attrs.GetInts("padding");
  for (int64_t p : padding) {
    if (p < 0) {
      throw Error(
          fmt::format("padding must be non-negative but is {}", ToString(AttrValue(padding))));
    }
  }
  int64_t tile = Winograd(attrs.GetInt("tile")).tile;
  InputGeometry g{data.shape[0],
                  data.shape[nhwc ? 3 : 1],
                  data.shape[nhwc ? 1 : 2],
                  data.shape[nhwc ? 2 : 3],
                  padding[0],
                  padding[1],
                  0,
                  0,
                  0,
                  0};
  g.out_h = CheckedAdd(CheckedAdd(g.h, padding[0], "the padded height (padding)"), padding[2],
                       "the padded height (padding)") -
            2;
  g.out_w = CheckedAdd(CheckedAdd(g.w, padding[1], "the padded width (padding)"), padding[3],
                       "the padded width (padding)") -
            2;
  if (g.out_h < 1 || g.out_w < 1) {
    throw Error(fmt::format(
        "the padded input {}x{} (data {} with padding {}) is smaller than the 3x3 kernel",
        g.out_h + 2, g.out_w + 2, ShapeToString(data.shape), ToString(AttrValue(padding))));
  }
  g.tiles_h = WinogradTiles(g.out_h, tile);
  g.tiles_w = WinogradTiles(g.out_w, tile);
  return g;
}

Type InferInputTransform(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "data");
  InputGeometry g = ReadInputGeometry(data, attrs);
  int64_t a = Winograd(attrs.GetInt("tile")).size;
  int64_t tiles =
      CheckedMul(CheckedMul(g.n, g.tiles_h, "the tile count"), g.tiles_w, "the tile count");
  return TensorType{{a * a, tiles, g.c}, data.dtype, ""};
}

std::vector<Tensor> InputTransformReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                            const Type& output) {
  const WinogradMatrices& w = Winograd(attrs.GetInt("tile"));
  InputGeometry g = ReadInputGeometry(inputs.at(0).type(), attrs);
  std::vector<double> data = inputs[0].ToDoubles();
  bool nhwc = ReadNhwc(attrs);
  int64_t a = w.size, m = w.tile;
  int64_t tiles = g.n * g.tiles_h * g.tiles_w;
  std::vector<double> out(static_cast<size_t>(a * a * tiles * g.c), 0.0);
  std::vector<double> d(static_cast<size_t>(a * a)), rows(static_cast<size_t>(a * a));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      for (int64_t tw = 0; tw < g.tiles_w; ++tw) {
        int64_t p = (n * g.tiles_h + th) * g.tiles_w + tw;
        for (int64_t c = 0; c < g.c; ++c) {
          // The tile of the zero-padded input, then B^T d B.
          for (int64_t i = 0; i < a; ++i) {
            for (int64_t j = 0; j < a; ++j) {
              int64_t y = th * m + i - g.top, x = tw * m + j - g.left;
              bool inside = y >= 0 && y < g.h && x >= 0 && x < g.w;
              int64_t at =
                  nhwc ? ((n * g.h + y) * g.w + x) * g.c + c : ((n * g.c + c) * g.h + y) * g.w + x;
              d[static_cast<size_t>(i * a + j)] = inside ? data[static_cast<size_t>(at)] : 0.0;
            }
          }
          for (int64_t xi = 0; xi < a; ++xi) {
            for (int64_t j = 0; j < a; ++j) {
              double sum = 0;
              for (int64_t i = 0; i < a; ++i)
                sum += w.bt[xi][i] * d[static_cast<size_t>(i * a + j)];
              rows[static_cast<size_t>(xi * a + j)] = sum;
            }
          }
          for (int64_t xi = 0; xi < a; ++xi) {
            for (int64_t nu = 0; nu < a; ++nu) {
              double sum = 0;
              for (int64_t j = 0; j < a; ++j) {
                sum += rows[static_cast<size_t>(xi * a + j)] * w.bt[nu][j];
              }
              out[static_cast<size_t>(((xi * a + nu) * tiles + p) * g.c + c)] = sum;
            }
          }
        }
      }
    }
  }
  return {FromDoubles(out, output)};
}

// ---- winograd_output_transform ----

struct OutputGeometry {
  int64_t n, k, out_h, out_w, tiles_h, tiles_w;
};

OutputGeometry ReadOutputGeometry(const TensorType& y, const Attrs& attrs) {
  const WinogradMatrices& w = Winograd(attrs.GetInt("tile"));
  CheckShapeRank(y, 3, "y", "[a*a, P, K]");
  CheckFloat(y, "y");
  CheckLength(attrs, "output_shape", 4);
  const std::vector<int64_t>& shape = attrs.GetInts("output_shape");
  for (int64_t extent : shape) {
    if (extent < 1) {
      throw Error(fmt::format("output_shape must have positive extents but is {}",
                              ToString(AttrValue(shape))));
    }
  }
  OutputGeometry g{shape[0],
                   shape[1],
                   shape[2],
                   shape[3],
                   WinogradTiles(shape[2], w.tile),
                   WinogradTiles(shape[3], w.tile)};
  int64_t tiles = CheckedMul(CheckedMul(g.n, g.tiles_h, "the tile count of output_shape"),
                             g.tiles_w, "the tile count of output_shape");
  if (y.shape[0] != w.size * w.size || y.shape[1] != tiles || y.shape[2] != g.k) {
    throw Error(fmt::format(
        "y must have shape [{}, {}, {}] for tile {} and output_shape {} ([a*a, N * "
        "ceil(OH/m) * ceil(OW/m), K]) but has shape {}",
        w.size * w.size, tiles, g.k, w.tile, ToString(AttrValue(shape)), ShapeToString(y.shape)));
  }
  return g;
}

Type InferOutputTransform(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& y = TensorOperand(inputs, 0, "y");
  OutputGeometry g = ReadOutputGeometry(y, attrs);
  if (ReadNhwc(attrs)) return TensorType{{g.n, g.out_h, g.out_w, g.k}, y.dtype, "NHWC"};
  return TensorType{{g.n, g.k, g.out_h, g.out_w}, y.dtype, ""};
}

std::vector<Tensor> OutputTransformReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                             const Type& output) {
  const WinogradMatrices& w = Winograd(attrs.GetInt("tile"));
  OutputGeometry g = ReadOutputGeometry(inputs.at(0).type(), attrs);
  std::vector<double> y = inputs[0].ToDoubles();
  bool nhwc = ReadNhwc(attrs);
  int64_t a = w.size, m = w.tile;
  int64_t tiles = g.n * g.tiles_h * g.tiles_w;
  std::vector<double> out(static_cast<size_t>(g.n * g.k * g.out_h * g.out_w), 0.0);
  std::vector<double> rows(static_cast<size_t>(m * a));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      for (int64_t tw = 0; tw < g.tiles_w; ++tw) {
        int64_t p = (n * g.tiles_h + th) * g.tiles_w + tw;
        for (int64_t k = 0; k < g.k; ++k) {
          auto at = [&](int64_t xi, int64_t nu) {
            return y[static_cast<size_t>(((xi * a + nu) * tiles + p) * g.k + k)];
          };
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t nu = 0; nu < a; ++nu) {
              double sum = 0;
              for (int64_t xi = 0; xi < a; ++xi) sum += w.at[i][xi] * at(xi, nu);
              rows[static_cast<size_t>(i * a + nu)] = sum;
            }
          }
          for (int64_t i = 0; i < m; ++i) {
            int64_t oh = th * m + i;
            if (oh >= g.out_h) break;
            for (int64_t j = 0; j < m; ++j) {
              int64_t ow = tw * m + j;
              if (ow >= g.out_w) break;
              double sum = 0;
              for (int64_t nu = 0; nu < a; ++nu) {
                sum += rows[static_cast<size_t>(i * a + nu)] * w.at[j][nu];
              }
              int64_t at = nhwc ? ((n * g.out_h + oh) * g.out_w + ow) * g.k + k
                                : ((n * g.k + k) * g.out_h + oh) * g.out_w + ow;
              out[static_cast<size_t>(at)] = sum;
            }
          }
        }
      }
    }
  }
  return {FromDoubles(out, output)};
}

AttrSpec LayoutSpec(const std::string& operand) {
  return {"layout", AttrKind::kString, std::string("NCHW"),
          fmt::format("layout of the {}: NCHW or NHWC", operand)};
}

AttrSpec TileSpec() {
  return {"tile", AttrKind::kInt, std::nullopt,
          "output tile extent m: 2 for F(2x2,3x3), 4 for F(4x4,3x3)"};
}

}  // namespace

void RegisterWinogradOps(OpRegistry& registry) {
  OpDef weight;
  weight.name = "winograd_weight_transform";
  weight.doc =
      "Winograd filter transform G g G^T of every (k, c) filter: weight [K,C,3,3] -> [a*a,C,K] "
      "(a = tile + 2); folded at compile time for constant weights";
  weight.attrs = {TileSpec()};
  weight.pattern = PatternKind::kOpaque;
  weight.infer_type = InferWeightTransform;
  weight.reference = WeightTransformReference;
  registry.Register(std::move(weight));

  OpDef input;
  input.name = "winograd_input_transform";
  input.doc =
      "Winograd input transform B^T d B of every a x a tile (stride tile) of the zero-padded "
      "data: data [N,C,H,W] (or [N,H,W,C] with layout NHWC) -> [a*a, "
      "N*ceil(OH/tile)*ceil(OW/tile), C] with OH = H + top + bottom - 2";
  input.attrs = {TileSpec(),
                 {"padding", AttrKind::kInts, AttrValue(std::vector<int64_t>{0, 0, 0, 0}),
                  "zero padding of the convolution: [top, left, bottom, right]"},
                 LayoutSpec("data")};
  input.pattern = PatternKind::kOpaque;
  input.infer_type = InferInputTransform;
  input.reference = InputTransformReference;
  registry.Register(std::move(input));

  OpDef output;
  output.name = "winograd_output_transform";
  output.doc =
      "Winograd output transform A^T Y A of every tile, cropped to the convolution result: y "
      "[a*a,P,K] -> output_shape [N,K,OH,OW] (or [N,OH,OW,K] with layout NHWC)";
  output.attrs = {TileSpec(),
                  {"output_shape", AttrKind::kInts, std::nullopt,
                   "shape [N, K, OH, OW] of the convolution result"},
                  LayoutSpec("result")};
  output.pattern = PatternKind::kOutElementwiseFusable;
  output.infer_type = InferOutputTransform;
  output.reference = OutputTransformReference;
  registry.Register(std::move(output));
}

}  // namespace tandem::ir::ops
