#include "ir/kernel/stmt.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace tandem::ir {

std::string ToString(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
    case ForKind::kBlockIdxX: return "blockIdx.x";
    case ForKind::kBlockIdxY: return "blockIdx.y";
    case ForKind::kBlockIdxZ: return "blockIdx.z";
    case ForKind::kThreadIdxX: return "threadIdx.x";
    case ForKind::kThreadIdxY: return "threadIdx.y";
    case ForKind::kThreadIdxZ: return "threadIdx.z";
  }
  return "?";
}

bool IsThreadBinding(ForKind kind) {
  return kind != ForKind::kSerial && kind != ForKind::kParallel && kind != ForKind::kVectorized &&
         kind != ForKind::kUnrolled;
}

bool IsBlockIndex(ForKind kind) {
  return kind == ForKind::kBlockIdxX || kind == ForKind::kBlockIdxY || kind == ForKind::kBlockIdxZ;
}

int ThreadBindingAxis(ForKind kind) {
  switch (kind) {
    case ForKind::kBlockIdxY:
    case ForKind::kThreadIdxY: return 1;
    case ForKind::kBlockIdxZ:
    case ForKind::kThreadIdxZ: return 2;
    default: return 0;
  }
}

std::string ToString(IterKind kind) { return kind == IterKind::kSpatial ? "spatial" : "reduce"; }

Stmt MakeFor(Var loop_var, int64_t extent, ForKind kind, Stmt body, Attrs annotations) {
  if (extent < 0) throw Error(fmt::format("loop '{}' has negative extent {}", loop_var->name, extent));
  auto n = std::make_shared<ForNode>();
  n->loop_var = std::move(loop_var);
  n->extent = extent;
  n->for_kind = kind;
  n->body = std::move(body);
  n->annotations = std::move(annotations);
  return n;
}

Stmt MakeSeq(std::vector<Stmt> stmts) {
  std::vector<Stmt> kept;
  for (Stmt& s : stmts) {
    if (!s) continue;
    if (const SeqNode* seq = As<SeqNode>(s)) {
      kept.insert(kept.end(), seq->stmts.begin(), seq->stmts.end());
    } else {
      kept.push_back(std::move(s));
    }
  }
  if (kept.size() == 1) return kept[0];
  auto n = std::make_shared<SeqNode>();
  n->stmts = std::move(kept);
  return n;
}

Stmt MakeStore(Buffer buffer, std::vector<Expr> indices, Expr value) {
  if (indices.size() != buffer->shape.size()) {
    throw Error(fmt::format("store to buffer '{}' (rank {}) with {} indices", buffer->name,
                            buffer->shape.size(), indices.size()));
  }
  if (value->dtype != buffer->dtype) {
    throw Error(fmt::format("store of a {} value to buffer '{}' of {}", ToString(value->dtype),
                            buffer->name, ToString(buffer->dtype)));
  }
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(buffer);
  n->indices = std::move(indices);
  n->value = std::move(value);
  return n;
}

Stmt MakeIfThenElse(Expr condition, Stmt then_case, Stmt else_case) {
  auto n = std::make_shared<IfThenElseNode>();
  n->condition = std::move(condition);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  return n;
}

Stmt MakeBlockRealize(std::vector<Expr> iter_values, Expr predicate, Block block) {
  if (iter_values.size() != block->iter_vars.size()) {
    throw Error(fmt::format("block '{}' has {} iterators but {} values are bound", block->name,
                            block->iter_vars.size(), iter_values.size()));
  }
  auto n = std::make_shared<BlockRealizeNode>();
  n->iter_values = std::move(iter_values);
  n->predicate = predicate.defined() ? std::move(predicate) : IntImm(1, DataType::kBool);
  n->block = std::move(block);
  return n;
}

}  // namespace tandem::ir
