// Code a whole GPU thread block runs: "shared" buffers in the block's shared memory and the
// barriers between the statements that pass data through them.
//
// A GPU kernel's statements outside every threadIdx-bound loop are run by all threads of the
// block alike (the loops over the tiles of a reduction, say); each threadIdx-bound loop among
// them is one step the threads take together, each thread running its own iteration. The kernel
// IR gives them the meaning of serial loops, as the interpreter runs them; on the GPU they run
// concurrently, so where one step writes shared data that a later step reads (or reads what a
// later step overwrites) the threads must meet at a barrier between the two. The code generator
// places those barriers; the interpreter checks shared accesses within each step only.
#include <fmt/format.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backends/llvm/codegen_internal.h"
#include "ir/error.h"

namespace tandem::backends::codegen {

using ir::Error;

namespace {

// Shared memory a thread block may use without opting into more (every supported GPU).
constexpr int64_t kMaxSharedBytes = 48 * 1024;

bool Intersects(const std::set<const ir::BufferNode*>& a,
                const std::set<const ir::BufferNode*>& b) {
  for (const ir::BufferNode* buffer : a) {
    if (b.count(buffer)) return true;
  }
  return false;
}

}  // namespace

bool SharedAccesses::ConflictsWith(const SharedAccesses& later) const {
  return Intersects(writes, later.reads) || Intersects(writes, later.writes) ||
         Intersects(reads, later.writes);
}

void SharedAccesses::Add(const SharedAccesses& other) {
  reads.insert(other.reads.begin(), other.reads.end());
  writes.insert(other.writes.begin(), other.writes.end());
}

SharedAccesses SharedAccessesOf(const ir::Stmt& s) {
  SharedAccesses accesses;
  auto note_loads = [&](const ir::Expr& top) {
    ir::VisitExprTree(top, [&](const ir::Expr& e) {
      if (e->kind == ir::ExprKind::kLoad && e->buffer->scope == "shared") {
        accesses.reads.insert(e->buffer.get());
      }
    });
  };
  ir::VisitStmtTree(s, [&](const ir::Stmt& stmt) {
    if (const auto* store = ir::As<ir::StoreNode>(stmt)) {
      if (store->buffer->scope == "shared") accesses.writes.insert(store->buffer.get());
    }
  });
  ir::VisitStmtExprs(s, note_loads);
  return accesses;
}

llvm::Value* KernelCodegen::AllocateShared(const ir::Buffer& buffer, int64_t count) {
  int64_t bytes = count * ir::SizeOf(buffer->dtype);
  shared_bytes_ += bytes;
  if (shared_bytes_ > kMaxSharedBytes) {
    throw Error(fmt::format(
        "buffer '{}' takes the thread block's shared memory to {} bytes (at most {}): stage "
        "smaller tiles",
        buffer->name, shared_bytes_, kMaxSharedBytes));
  }
  auto* type = llvm::ArrayType::get(MemoryType(buffer->dtype),
                                    static_cast<uint64_t>(std::max<int64_t>(count, 1)));
  // Shared memory cannot be initialized: the schedule writes every element it reads (a
  // cache_read's copy) before reading it.
  auto* array = new llvm::GlobalVariable(
      module_, type, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
      llvm::UndefValue::get(type), function_->getName() + "." + buffer->name, nullptr,
      llvm::GlobalValue::NotThreadLocal, /*AddressSpace=*/3);
  array->setAlignment(llvm::Align(16));
  return array;
}

void KernelCodegen::EmitBarrier() {
  builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

// Steps:
//   1. the shared buffers each statement reads and writes;
//   2. before each statement, a barrier when it conflicts with what the statements since the
//      last barrier did; then the statement, whose accesses join that set.
void KernelCodegen::EmitBlockLevelSequence(const std::vector<ir::Stmt>& statements) {
  SharedAccesses since_barrier;
  for (const ir::Stmt& statement : statements) {
    // 1. Its accesses.
    SharedAccesses accesses = SharedAccessesOf(statement);
    // 2. Barrier, statement.
    if (since_barrier.ConflictsWith(accesses)) {
      EmitBarrier();
      since_barrier = SharedAccesses();
    }
    Emit(statement);
    since_barrier.Add(accesses);
  }
}

}  // namespace tandem::backends::codegen
