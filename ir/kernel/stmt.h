// Statements and kernel functions of the kernel IR.
//
// A kernel function takes buffers and has a body made of:
//   For           a loop `for v in [0, extent)` that is serial, parallel, vectorized or unrolled,
//                 or bound to a GPU thread index (blockIdx.x/y/z, threadIdx.x/y/z: each
//                 iteration runs on its own thread block or thread), with free-form
//                 annotations (e.g. "pragma_auto_unroll_max_step")
//   Seq           statements in order
//   Store         buffer[indices] = value
//   IfThenElse    a guard
//   BlockRealize  an instance of a Block: binds each block iterator to a loop expression
//                 (iter_values) under a predicate
// A Block is the unit the schedule reasons about: named, with spatial and reduction iterators
// over [0, extent), the buffer regions it reads and writes (in terms of its iterators), an
// optional init statement (run when every reduction iterator is 0), a body, and the buffers it
// allocates. The root of every kernel function is a BlockRealize of a block named "root".
//
// Nodes are immutable and shared; transformations rebuild the path to what they change.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/kernel/expr.h"

namespace tandem::ir {

enum class StmtKind { kFor, kSeq, kStore, kIfThenElse, kBlockRealize };
enum class ForKind {
  kSerial,
  kParallel,
  kVectorized,
  kUnrolled,
  // Bound to a GPU thread index. Iterations must be independent, as for kParallel; a loop
  // bound to an index whose launch extent is larger than the loop's runs only where the index
  // is below its extent.
  kBlockIdxX,
  kBlockIdxY,
  kBlockIdxZ,
  kThreadIdxX,
  kThreadIdxY,
  kThreadIdxZ,
};
// Every loop kind, in declaration order (what the parser accepts after a loop's extent).
inline constexpr ForKind kAllForKinds[] = {
    ForKind::kSerial,     ForKind::kParallel,  ForKind::kVectorized, ForKind::kUnrolled,
    ForKind::kBlockIdxX,  ForKind::kBlockIdxY, ForKind::kBlockIdxZ,  ForKind::kThreadIdxX,
    ForKind::kThreadIdxY, ForKind::kThreadIdxZ};
// True for the kinds that bind a loop to a GPU block or thread index.
bool IsThreadBinding(ForKind kind);
// True for blockIdx.x/y/z.
bool IsBlockIndex(ForKind kind);
// The axis (0 for x, 1 for y, 2 for z) of a thread binding.
int ThreadBindingAxis(ForKind kind);
enum class IterKind { kSpatial, kReduction };

std::string ToString(ForKind kind);
std::string ToString(IterKind kind);

class StmtNode {
 public:
  explicit StmtNode(StmtKind kind) : kind(kind) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};
using Stmt = std::shared_ptr<const StmtNode>;

struct Range {
  Expr min;
  Expr extent;
};

struct BufferRegion {
  Buffer buffer;
  std::vector<Range> region;  // one range per buffer axis
};

struct IterVar {
  Var var;
  int64_t extent = 1;  // domain [0, extent)
  IterKind kind = IterKind::kSpatial;
};

struct BlockNode {
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<BufferRegion> reads;
  std::vector<BufferRegion> writes;
  Stmt init;  // may be null
  Stmt body;
  std::vector<Buffer> alloc_buffers;
  Attrs annotations;
};
using Block = std::shared_ptr<const BlockNode>;

// Loop annotation read by the CPU code generator (an integer d, 0 < d < extent): inside the
// loop, every vector read of a kernel parameter the kernel never writes whose address depends
// on the loop variable also prefetches into L2 what the same read loads d iterations later
// (clamped to the last iteration). A hint only: results are the same with or without it.
inline constexpr char kPrefetchDistanceKey[] = "tandem.prefetch_distance";

struct ForNode : StmtNode {
  ForNode() : StmtNode(StmtKind::kFor) {}
  Var loop_var;
  int64_t extent = 1;  // loops always start at 0
  ForKind for_kind = ForKind::kSerial;
  Attrs annotations;  // hints that leave the semantics unchanged (kPrefetchDistanceKey, ...)
  Stmt body;
};

struct SeqNode : StmtNode {
  SeqNode() : StmtNode(StmtKind::kSeq) {}
  std::vector<Stmt> stmts;
};

struct StoreNode : StmtNode {
  StoreNode() : StmtNode(StmtKind::kStore) {}
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
};

struct IfThenElseNode : StmtNode {
  IfThenElseNode() : StmtNode(StmtKind::kIfThenElse) {}
  Expr condition;
  Stmt then_case;
  Stmt else_case;  // may be null
};

struct BlockRealizeNode : StmtNode {
  BlockRealizeNode() : StmtNode(StmtKind::kBlockRealize) {}
  std::vector<Expr> iter_values;  // one per block iterator
  Expr predicate;                 // i64/bool expression; IntImm 1 when always true
  Block block;
};

// Checked downcast: returns nullptr when `stmt` is not a T.
template <typename T>
const T* As(const Stmt& stmt);
template <>
inline const ForNode* As<ForNode>(const Stmt& s) {
  return s && s->kind == StmtKind::kFor ? static_cast<const ForNode*>(s.get()) : nullptr;
}
template <>
inline const SeqNode* As<SeqNode>(const Stmt& s) {
  return s && s->kind == StmtKind::kSeq ? static_cast<const SeqNode*>(s.get()) : nullptr;
}
template <>
inline const StoreNode* As<StoreNode>(const Stmt& s) {
  return s && s->kind == StmtKind::kStore ? static_cast<const StoreNode*>(s.get()) : nullptr;
}
template <>
inline const IfThenElseNode* As<IfThenElseNode>(const Stmt& s) {
  return s && s->kind == StmtKind::kIfThenElse ? static_cast<const IfThenElseNode*>(s.get())
                                               : nullptr;
}
template <>
inline const BlockRealizeNode* As<BlockRealizeNode>(const Stmt& s) {
  return s && s->kind == StmtKind::kBlockRealize ? static_cast<const BlockRealizeNode*>(s.get())
                                                 : nullptr;
}

Stmt MakeFor(Var loop_var, int64_t extent, ForKind kind, Stmt body, Attrs annotations = {});
// A Seq of the non-null statements; a single statement is returned as is.
Stmt MakeSeq(std::vector<Stmt> stmts);
Stmt MakeStore(Buffer buffer, std::vector<Expr> indices, Expr value);
Stmt MakeIfThenElse(Expr condition, Stmt then_case, Stmt else_case = nullptr);
Stmt MakeBlockRealize(std::vector<Expr> iter_values, Expr predicate, Block block);

// A compiled unit: buffers in, buffers out, one body. Parameters are listed inputs first, then
// outputs; `num_outputs` says how many of the trailing parameters are written.
struct KernelFunction {
  std::string name;
  std::vector<Buffer> params;
  int num_outputs = 1;
  Stmt body;  // a BlockRealize of the "root" block
  Attrs attrs;
};

}  // namespace tandem::ir
