// Matrix products: dense, matmul (numpy semantics), packed_matmul and batch_matmul.
#include <fmt/format.h>

#include "ir/op_registry.h"
#include "ir/ops/op_util.h"

namespace tandem::ir::ops {
namespace {

void CheckSameDataType(const TensorType& a, const TensorType& b, const std::string& a_role,
                       const std::string& b_role) {
  if (a.dtype != b.dtype) {
    throw Error(fmt::format("{} is {} but {} is {}; both must have one data type", a_role,
                            ToString(a.dtype), b_role, ToString(b.dtype)));
  }
}

// One matrix of a product: element (row, column) is at offset row * row_stride + column *
// column_stride.
struct MatrixView {
  const double* data;
  int64_t row_stride;
  int64_t column_stride;
};

// out[i, j] += sum_k a(i, k) * b(k, j) for an [M, N] row-major `out`.
void MultiplyAccumulate(MatrixView a, MatrixView b, double* out, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    double* out_row = out + i * n;
    for (int64_t p = 0; p < k; ++p) {
      double value = a.data[i * a.row_stride + p * a.column_stride];
      const double* b_row = b.data + p * b.row_stride;
      if (b.column_stride == 1) {
        for (int64_t j = 0; j < n; ++j) out_row[j] += value * b_row[j];
      } else {
        for (int64_t j = 0; j < n; ++j) out_row[j] += value * b_row[j * b.column_stride];
      }
    }
  }
}

Tensor ToTensor(const std::vector<double>& values, const Type& output) {
  Tensor result(output.tensor());
  if (result.num_elements() != static_cast<int64_t>(values.size())) {
    throw Error("result type does not match the operands");
  }
  for (size_t i = 0; i < values.size(); ++i) result.SetDouble(static_cast<int64_t>(i), values[i]);
  return result;
}

// ---- dense ----

Type InferDense(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& data = TensorOperand(inputs, 0, "data");
  const TensorType& weight = TensorOperand(inputs, 1, "weight");
  if (data.rank() < 1) throw Error("data must have rank at least 1 but is a scalar");
  if (weight.rank() != 2) {
    throw Error(fmt::format("weight must have rank 2 ([N, K]) but has shape {}",
                            ShapeToString(weight.shape)));
  }
  CheckSameDataType(data, weight, "data", "weight");
  int64_t k = data.shape.back();
  if (weight.shape[1] != k) {
    throw Error(
        fmt::format("K of data ({}, the last axis of {}) must equal K of weight ({}, axis 1 of {})",
                    k, ShapeToString(data.shape), weight.shape[1], ShapeToString(weight.shape)));
  }
  Shape shape = data.shape;
  shape.back() = weight.shape[0];
  return TensorType{shape, data.dtype, ""};
}

std::vector<Tensor> DenseReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                   const Type& output) {
  std::vector<double> data = inputs.at(0).ToDoubles();
  std::vector<double> weight = inputs.at(1).ToDoubles();
  int64_t k = inputs[1].shape()[1];
  int64_t n = inputs[1].shape()[0];
  const Shape& data_shape = inputs[0].shape();
  int64_t m = NumElements(Shape(data_shape.begin(), data_shape.end() - 1));
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    const double* row = data.data() + i * k;
    for (int64_t j = 0; j < n; ++j) {
      const double* column = weight.data() + j * k;
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += row[p] * column[p];
      out[static_cast<size_t>(i * n + j)] = sum;
    }
  }
  return {ToTensor(out, output)};
}

// ---- matmul ----

// Operand shapes of a matmul with rank-1 operands promoted as numpy does.
struct MatmulShapes {
  Shape a;  // [..., M, K]
  Shape b;  // [..., K, N]
  Shape batch;
  Shape result;
};

MatmulShapes MatmulGeometry(const TensorType& a, const TensorType& b) {
  if (a.rank() < 1 || b.rank() < 1) {
    throw Error(fmt::format("operands must have rank at least 1 but a is {} and b is {}",
                            ShapeToString(a.shape), ShapeToString(b.shape)));
  }
  CheckSameDataType(a, b, "a", "b");
  MatmulShapes s;
  s.a = a.rank() == 1 ? Shape{1, a.shape[0]} : a.shape;
  s.b = b.rank() == 1 ? Shape{b.shape[0], 1} : b.shape;
  int64_t ka = s.a[s.a.size() - 1];
  int64_t kb = s.b[s.b.size() - 2];
  if (ka != kb) {
    throw Error(fmt::format(
        "K of a ({}, the last axis of {}) must equal K of b ({}, axis {} of {})", ka,
        ShapeToString(a.shape), kb, b.rank() == 1 ? 0 : b.rank() - 2, ShapeToString(b.shape)));
  }
  Shape a_batch(s.a.begin(), s.a.end() - 2);
  Shape b_batch(s.b.begin(), s.b.end() - 2);
  try {
    s.batch = BroadcastShapes(a_batch, b_batch);
  } catch (const Error& e) {
    throw Error(fmt::format("batch axes of a {} and b {} cannot be broadcast: {}",
                            ShapeToString(a.shape), ShapeToString(b.shape), e.message()));
  }
  s.result = s.batch;
  if (a.rank() > 1) s.result.push_back(s.a[s.a.size() - 2]);
  if (b.rank() > 1) s.result.push_back(s.b[s.b.size() - 1]);
  return s;
}

Type InferMatmul(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& a = TensorOperand(inputs, 0, "a");
  const TensorType& b = TensorOperand(inputs, 1, "b");
  return TensorType{MatmulGeometry(a, b).result, a.dtype, ""};
}

std::vector<Tensor> MatmulReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                    const Type& output) {
  MatmulShapes s = MatmulGeometry(inputs.at(0).type(), inputs.at(1).type());
  std::vector<double> a = inputs[0].ToDoubles();
  std::vector<double> b = inputs[1].ToDoubles();
  int64_t m = s.a[s.a.size() - 2];
  int64_t k = s.a[s.a.size() - 1];
  int64_t n = s.b[s.b.size() - 1];
  Shape a_batch(s.a.begin(), s.a.end() - 2);
  Shape b_batch(s.b.begin(), s.b.end() - 2);
  std::vector<double> out(static_cast<size_t>(NumElements(s.batch) * m * n), 0.0);
  ForEachIndex(s.batch, [&](const std::vector<int64_t>& index, int64_t flat) {
    const double* a_matrix = a.data() + BroadcastOffset(index, a_batch) * m * k;
    const double* b_matrix = b.data() + BroadcastOffset(index, b_batch) * k * n;
    MultiplyAccumulate({a_matrix, k, 1}, {b_matrix, n, 1}, out.data() + flat * m * n, m, k, n);
  });
  return {ToTensor(out, output)};
}

// ---- packed_matmul ----

// N of a packed operand [..., panels, K, nb]: the `columns` attribute, or panels x nb when it
// is 0. Columns past N (in the last panel) are padding that the product never reads.
int64_t PackedColumns(const TensorType& packed, const Attrs& attrs) {
  size_t r = packed.shape.size();
  int64_t capacity = packed.shape[r - 3] * packed.shape[r - 1];
  int64_t columns = attrs.GetInt("columns");
  if (columns == 0) return capacity;
  if (columns > capacity || columns <= capacity - packed.shape[r - 1]) {
    throw Error(fmt::format(
        "columns must be in ({}, {}] (the last of {} panels of {} partly used) but is {}",
        capacity - packed.shape[r - 1], capacity, packed.shape[r - 3], packed.shape[r - 1],
        columns));
  }
  return columns;
}

// The plain shape [..., K, N] of a packed operand [..., N / nb, K, nb].
Shape UnpackedShape(const TensorType& packed, const Attrs& attrs) {
  if (packed.rank() < 3) {
    throw Error(fmt::format("b must have rank at least 3 ([..., N/nb, K, nb]) but has shape {}",
                            ShapeToString(packed.shape)));
  }
  if (!packed.layout.empty()) {
    throw Error(fmt::format("b must carry no layout but carries '{}'", packed.layout));
  }
  size_t r = packed.shape.size();
  Shape plain(packed.shape.begin(), packed.shape.end() - 3);
  plain.push_back(packed.shape[r - 2]);
  plain.push_back(PackedColumns(packed, attrs));
  return plain;
}

Type InferPackedMatmul(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& a = TensorOperand(inputs, 0, "a");
  const TensorType& b = TensorOperand(inputs, 1, "b");
  if (a.rank() < 2) {
    throw Error(fmt::format("a must have rank at least 2 ([..., M, K]) but has shape {}",
                            ShapeToString(a.shape)));
  }
  TensorType plain{UnpackedShape(b, attrs), b.dtype, ""};
  return TensorType{MatmulGeometry(a, plain).result, a.dtype, ""};
}

std::vector<Tensor> PackedMatmulReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                          const Type& output) {
  const Tensor& packed = inputs.at(1);
  const Shape& shape = packed.shape();
  size_t r = shape.size();
  int64_t panels = shape[r - 3], k = shape[r - 2], block = shape[r - 1];
  int64_t n = PackedColumns(packed.type(), attrs);
  Tensor plain(TensorType{UnpackedShape(packed.type(), attrs), packed.dtype(), ""});
  int64_t matrices = NumElements(Shape(shape.begin(), shape.end() - 3));
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t from = ((m * panels + j / block) * k + p) * block + j % block;
        plain.SetDouble((m * k + p) * n + j, packed.GetDouble(from));
      }
    }
  }
  return MatmulReference({inputs.at(0), plain}, attrs, output);
}

// ---- batch_matmul ----

struct BatchMatmulShapes {
  int64_t a_batch, b_batch, m, k, n;
  bool transpose_a, transpose_b;
};

bool ReadFlag(const Attrs& attrs, const std::string& name) {
  int64_t value = attrs.GetInt(name);
  if (value != 0 && value != 1) {
    throw Error(fmt::format("attribute '{}' must be 0 or 1 but is {}", name, value));
  }
  return value == 1;
}

BatchMatmulShapes BatchMatmulGeometry(const TensorType& a, const TensorType& b,
                                      const Attrs& attrs) {
  BatchMatmulShapes s;
  s.transpose_a = ReadFlag(attrs, "transpose_a");
  s.transpose_b = ReadFlag(attrs, "transpose_b");
  if (a.rank() != 3) {
    throw Error(fmt::format("a must have rank 3 ({}) but has shape {}",
                            s.transpose_a ? "[B, K, M]" : "[B, M, K]", ShapeToString(a.shape)));
  }
  if (b.rank() != 3) {
    throw Error(fmt::format("b must have rank 3 ({}) but has shape {}",
                            s.transpose_b ? "[B, N, K]" : "[B, K, N]", ShapeToString(b.shape)));
  }
  CheckSameDataType(a, b, "a", "b");
  s.a_batch = a.shape[0];
  s.b_batch = b.shape[0];
  if (s.a_batch != s.b_batch && s.a_batch != 1 && s.b_batch != 1) {
    throw Error(fmt::format("batch of a ({}) and batch of b ({}) must be equal or 1", s.a_batch,
                            s.b_batch));
  }
  s.m = a.shape[s.transpose_a ? 2 : 1];
  s.k = a.shape[s.transpose_a ? 1 : 2];
  int64_t kb = b.shape[s.transpose_b ? 2 : 1];
  s.n = b.shape[s.transpose_b ? 1 : 2];
  if (s.k != kb) {
    throw Error(
        fmt::format("K of a ({}, shape {}, transpose_a={}) must equal K of b ({}, shape "
                    "{}, transpose_b={})",
                    s.k, ShapeToString(a.shape), s.transpose_a ? 1 : 0, kb, ShapeToString(b.shape),
                    s.transpose_b ? 1 : 0));
  }
  return s;
}

Type InferBatchMatmul(const std::vector<Type>& inputs, const Attrs& attrs) {
  const TensorType& a = TensorOperand(inputs, 0, "a");
  const TensorType& b = TensorOperand(inputs, 1, "b");
  BatchMatmulShapes s = BatchMatmulGeometry(a, b, attrs);
  return TensorType{{std::max(s.a_batch, s.b_batch), s.m, s.n}, a.dtype, ""};
}

std::vector<Tensor> BatchMatmulReference(const std::vector<Tensor>& inputs, const Attrs& attrs,
                                         const Type& output) {
  BatchMatmulShapes s = BatchMatmulGeometry(inputs.at(0).type(), inputs.at(1).type(), attrs);
  std::vector<double> a = inputs[0].ToDoubles();
  std::vector<double> b = inputs[1].ToDoubles();
  int64_t batch = std::max(s.a_batch, s.b_batch);
  std::vector<double> out(static_cast<size_t>(batch * s.m * s.n), 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    MatrixView a_view{a.data() + (s.a_batch == 1 ? 0 : i) * s.m * s.k, s.transpose_a ? 1 : s.k,
                      s.transpose_a ? s.m : 1};
    MatrixView b_view{b.data() + (s.b_batch == 1 ? 0 : i) * s.k * s.n, s.transpose_b ? 1 : s.n,
                      s.transpose_b ? s.k : 1};
    MultiplyAccumulate(a_view, b_view, out.data() + i * s.m * s.n, s.m, s.k, s.n);
  }
  return {ToTensor(out, output)};
}

}  // namespace

void RegisterMatmulOps(OpRegistry& registry) {
  OpDef dense;
  dense.name = "dense";
  dense.doc = "fully connected layer: data [..., K], weight [N, K] -> [..., N] (data x weight^T)";
  dense.min_inputs = 2;
  dense.max_inputs = 2;
  dense.pattern = PatternKind::kOutElementwiseFusable;
  dense.infer_type = InferDense;
  dense.reference = DenseReference;
  registry.Register(std::move(dense));

  OpDef matmul;
  matmul.name = "matmul";
  matmul.doc =
      "numpy matmul: a [..., M, K], b [..., K, N] -> [..., M, N] with broadcast batch axes; a "
      "rank-1 operand is promoted to a matrix and the added axis removed from the result";
  matmul.min_inputs = 2;
  matmul.max_inputs = 2;
  matmul.pattern = PatternKind::kOutElementwiseFusable;
  matmul.infer_type = InferMatmul;
  matmul.reference = MatmulReference;
  registry.Register(std::move(matmul));

  OpDef packed_matmul;
  packed_matmul.name = "packed_matmul";
  packed_matmul.doc =
      "matmul with b packed in column panels: a [..., M, K], b [..., N/nb, K, nb] -> [..., M, N] "
      "= matmul(a, b') with b'[..., k, j] = b[..., j / nb, k, j % nb]; a register tile then "
      "reads one contiguous panel (PackMatmulWeights writes it for constant weights); when nb does "
      "not divide N, the last panel is padded and `columns` gives N";
  packed_matmul.attrs = {
      {"columns", AttrKind::kInt, AttrValue(int64_t{0}),
       "N when the last panel is partly padding (0: panels x nb)"},
  };
  packed_matmul.min_inputs = 2;
  packed_matmul.max_inputs = 2;
  packed_matmul.pattern = PatternKind::kOutElementwiseFusable;
  packed_matmul.infer_type = InferPackedMatmul;
  packed_matmul.reference = PackedMatmulReference;
  registry.Register(std::move(packed_matmul));

  OpDef batch_matmul;
  batch_matmul.name = "batch_matmul";
  batch_matmul.doc =
      "batched matrix product: a [B, M, K] (or [B, K, M] with transpose_a), b [B, K, N] (or "
      "[B, N, K] with transpose_b) -> [B, M, N]; a batch of 1 broadcasts";
  batch_matmul.min_inputs = 2;
  batch_matmul.max_inputs = 2;
  batch_matmul.attrs = {
      {"transpose_a", AttrKind::kInt, AttrValue(int64_t{0}), "1: a is stored as [B, K, M]"},
      {"transpose_b", AttrKind::kInt, AttrValue(int64_t{0}), "1: b is stored as [B, N, K]"},
  };
  batch_matmul.pattern = PatternKind::kOutElementwiseFusable;
  batch_matmul.infer_type = InferBatchMatmul;
  batch_matmul.reference = BatchMatmulReference;
  registry.Register(std::move(batch_matmul));
}

}  // namespace tandem::ir::ops
