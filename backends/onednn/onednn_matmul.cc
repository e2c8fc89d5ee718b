// oneDNN matmul for matmul, batch_matmul and dense, with a constant bias as the primitive's bias
// and the rest of the epilogue (activation, residual) as post-ops. Every operand is described in
// the result's rank (batch axes of 1 broadcast); transposed operands are strided views, never
// copies. A constant right-hand operand (a weight) is packed once into the layout the primitive
// prefers.
#include <fmt/format.h>

#include "backends/onednn/onednn_compiler.h"
#include "ir/error.h"

namespace tandem::backends {

namespace {

using dnnl::memory;

// An operand with logical shape `logical` ([..., rows, columns]) seen in `rank` dimensions (batch
// axes of 1 prepended). Its data is row-major over `logical`, or over `logical` with the last two
// axes swapped when `transposed`.
memory::desc MatrixDesc(ir::Shape logical, size_t rank, bool transposed) {
  if (logical.size() < 2) throw ir::Error("oneDNN: a matmul operand of rank below 2");
  while (logical.size() < rank) logical.insert(logical.begin(), 1);
  ir::Shape stored = logical;
  if (transposed) std::swap(stored[rank - 1], stored[rank - 2]);
  memory::dims strides(rank);
  int64_t step = 1;
  for (size_t k = rank; k-- > 0;) {
    strides[k] = step;
    step *= stored[k];
  }
  if (transposed) std::swap(strides[rank - 1], strides[rank - 2]);
  return memory::desc(memory::dims(logical.begin(), logical.end()), memory::data_type::f32,
                      strides);
}

}  // namespace

std::unique_ptr<OnednnFunction> CompileOnednnMatmul(OnednnCompiler& compiler) {
  const ir::Node& node = compiler.anchor();
  const ir::GraphFunction& subgraph = compiler.subgraph();
  const ir::TensorType& a = subgraph.type_of(compiler.Operand(0)).tensor();
  const ir::TensorType& b = subgraph.type_of(compiler.Operand(1)).tensor();
  const ir::TensorType& result = node.type.tensor();
  if (!a.layout.empty() || !b.layout.empty() || !result.layout.empty()) {
    throw ir::Error("oneDNN: matmul operands with a layout tag");
  }
  size_t rank = result.shape.size();
  if (rank < 2 || a.shape.size() < 2 || b.shape.size() < 2) {
    throw ir::Error("oneDNN: matmul with an operand of rank below 2");
  }
  memory::desc a_desc, b_desc;
  if (node.op == "dense") {  // data [..., K] x weight [N, K]^T
    a_desc = MatrixDesc(a.shape, rank, false);
    b_desc = MatrixDesc({b.shape[1], b.shape[0]}, rank, true);
  } else if (node.op == "batch_matmul") {
    bool transpose_a = node.attrs.GetInt("transpose_a") != 0;
    bool transpose_b = node.attrs.GetInt("transpose_b") != 0;
    ir::Shape a_logical = a.shape, b_logical = b.shape;
    if (transpose_a) std::swap(a_logical[1], a_logical[2]);
    if (transpose_b) std::swap(b_logical[1], b_logical[2]);
    a_desc = MatrixDesc(a_logical, rank, transpose_a);
    b_desc = MatrixDesc(b_logical, rank, transpose_b);
  } else {
    a_desc = MatrixDesc(a.shape, rank, false);
    b_desc = MatrixDesc(b.shape, rank, false);
  }
  memory::desc dst_desc = PlainDesc(result.shape);

  std::optional<memory> bias = compiler.TakeBias("", result, rank - 1, false);
  std::unordered_map<int, memory> args;
  dnnl::primitive_attr attr = compiler.PostOps("", result, args);
  OnednnContext& context = compiler.context();
  bool constant_b = compiler.IsConstant(compiler.Operand(1));
  memory::desc wanted_b =
      constant_b ? memory::desc(b_desc.dims(), memory::data_type::f32, memory::format_tag::any)
                 : b_desc;
  dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(a_desc, wanted_b, bias->get_desc(), dst_desc)
                                 : dnnl::matmul::desc(a_desc, wanted_b, dst_desc);
  dnnl::matmul::primitive_desc descriptor(desc, attr, context.engine);
  memory user_b = compiler.Bind(compiler.Operand(1), b_desc);
  args[DNNL_ARG_SRC] = compiler.Bind(compiler.Operand(0), a_desc);
  args[DNNL_ARG_WEIGHTS] =
      constant_b ? ReorderNow(user_b, descriptor.weights_desc(), context) : user_b;
  args[DNNL_ARG_DST] = compiler.BindResult(dst_desc);
  if (bias) args[DNNL_ARG_BIAS] = *bias;
  compiler.program().Add(dnnl::matmul(descriptor), args, descriptor, "matmul");
  return compiler.Finish();
}

}  // namespace tandem::backends
