// ComputeBuilder: a small tensor-expression builder that produces kernel functions in the shape
// every schedule primitive and code generator expects.
//
// A compute is declared the way TE declares one: an output buffer, named iterators and an
// expression of those iterators. The builder turns each compute into one Block wrapped in its
// own serial loop nest (one loop per block iterator, in iterator order, spatial iterators first;
// each loop var has its iterator's name and is bound as that iterator's value) and derives the
// block's read and write regions from the expression:
//   - one BufferRegion per distinct buffer read, covering its accesses in terms of the block
//     iterators (a point access A[i, k] is [i, 1) x [k, 1); several different accesses get the
//     covering box min(...) .. max(...));
//   - a reduction's output buffer is listed in writes only.
// Finish() assembles the function: params are the inputs then the outputs, and the body is a
// BlockRealize of the iterator-less block "root" whose body is a Seq of the loop nests (always a
// Seq, even for one block) and whose alloc_buffers are the intermediate buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/kernel/expr.h"
#include "ir/kernel/stmt.h"
#include "ir/type.h"

namespace tandem::kernels {

// A reduction iterator: its name and its domain [0, extent).
struct ReduceAxis {
  std::string name;
  int64_t extent = 1;
};

enum class Reducer { kSum, kMax, kMin, kProd };

// out[s...] of a spatial compute, given the block's spatial iterators.
using SpatialBody = std::function<ir::Expr(const std::vector<ir::Var>& spatial)>;
// The value a reduction combines into out[s...], given spatial and reduction iterators.
using ReduceBody = std::function<ir::Expr(const std::vector<ir::Var>& spatial,
                                          const std::vector<ir::Var>& reduce)>;

class ComputeBuilder {
 public:
  explicit ComputeBuilder(std::string function_name);

  // Parameters, in call order. Names are made unique within the function.
  ir::Buffer AddInput(const std::string& name, const ir::TensorType& type);
  ir::Buffer AddOutput(const std::string& name, const ir::TensorType& type);
  // A "global" buffer allocated by the root block.
  ir::Buffer AddIntermediate(const std::string& name, ir::DataType dtype, const ir::Shape& shape);

  // Adds the block `block_name` (made unique) computing out[s...] = body(s) with one spatial
  // iterator per axis of `out`, named by `names`.
  void Compute(const std::string& block_name, const ir::Buffer& out,
               const std::vector<std::string>& names, const SpatialBody& body);

  // Adds the reduction block `block_name` (made unique): out[s...] = reducer over the reduction
  // iterators of body(s, r). Its init stores the reducer's identity (0; 1 for a product; the
  // lowest value of the dtype for max, -inf for floats; the highest for min); its body is
  // out[s] = out[s] + value (or out[s] * value, max(out[s], value), min(out[s], value)).
  // Accumulation happens in the output's dtype.
  void Reduce(const std::string& block_name, const ir::Buffer& out,
              const std::vector<std::string>& spatial_names, const std::vector<ReduceAxis>& axes,
              Reducer reducer, const ReduceBody& body);

  const std::vector<ir::Buffer>& inputs() const { return inputs_; }
  const std::vector<ir::Buffer>& outputs() const { return outputs_; }

  // The kernel function built so far (the builder stays usable).
  ir::KernelFunction Finish() const;

 private:
  std::string UniqueBufferName(const std::string& name);
  std::string UniqueBlockName(const std::string& name);
  void AddBlock(ir::Block block, const std::vector<ir::Var>& loop_vars);

  std::string function_name_;
  std::vector<ir::Buffer> inputs_;
  std::vector<ir::Buffer> outputs_;
  std::vector<ir::Buffer> intermediates_;
  std::vector<ir::Stmt> nests_;
  std::set<std::string> buffer_names_;
  std::set<std::string> block_names_;
};

// The regions `value` reads, one per distinct buffer in order of first appearance, skipping
// `exclude` (may be null).
std::vector<ir::BufferRegion> ReadRegions(const ir::Expr& value, const ir::Buffer& exclude);

// Structural equality of expressions (variables and buffers by identity).
bool SameExpr(const ir::Expr& a, const ir::Expr& b);

// The identity of `reducer` in `dtype`: 0 for kSum, 1 for kProd, the lowest value for kMax
// (-inf for float types), the highest for kMin (+inf for float types).
ir::Expr ReducerIdentity(Reducer reducer, ir::DataType dtype);

// "i0", "i1", ... (`prefix` followed by the position).
std::vector<std::string> AxisNames(size_t rank, const std::string& prefix = "i");

}  // namespace tandem::kernels
