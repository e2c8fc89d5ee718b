// The kernel IR -> LLVM IR translator behind backends/llvm/codegen.h (internal header: it
// exposes LLVM types; only backends/llvm/*.cc include it).
//
// One KernelCodegen translates one kernel function. Expressions evaluate to CgValues: inside a
// vectorized loop a value is either the same for every lane (uniform: one scalar), affine in
// the lane index (an i64 scalar for lane 0 plus a constant stride: what turns index arithmetic
// into vector loads/stores), or a general vector. Outside vectorized loops every value is
// uniform, so scalar and vector code share one code path.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/llvm/codegen.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/stmt.h"
#include "kernels/compact_guarded_loops.h"

namespace tandem::backends::codegen {

struct CgValue {
  enum class Form { kUniform, kAffine, kVector };
  Form form = Form::kUniform;
  llvm::Value* value = nullptr;  // scalar (uniform), lane-0 scalar (affine) or vector
  int64_t stride = 0;            // affine only: lane l holds value + stride * l
  ir::DataType dtype = ir::DataType::kInt64;
  // i64 uniform and affine values: `value` (lane 0) is known to be a multiple of this, 0 when
  // it is known to be 0 (what lets floordiv/floormod of a vectorized index by a tile size stay
  // uniform/affine).
  int64_t multiple = 1;

  bool uniform() const { return form == Form::kUniform; }
};

// Binds map[key] = value for the lifetime of this object, then restores the previous entry.
template <typename Map>
class ScopedEntry {
 public:
  ScopedEntry(Map& map, typename Map::key_type key, typename Map::mapped_type value)
      : map_(map), key_(key) {
    auto it = map.find(key);
    if (it != map.end()) {
      had_previous_ = true;
      previous_ = it->second;
    }
    map[key] = value;
  }
  ~ScopedEntry() {
    if (had_previous_) {
      map_[key_] = previous_;
    } else {
      map_.erase(key_);
    }
  }
  ScopedEntry(const ScopedEntry&) = delete;
  ScopedEntry& operator=(const ScopedEntry&) = delete;

 private:
  Map& map_;
  typename Map::key_type key_;
  bool had_previous_ = false;
  typename Map::mapped_type previous_{};
};

// Target-dependent attributes every generated function carries.
struct FunctionAttributes {
  std::string cpu;
  std::string features;
  int prefer_vector_width = 0;
};

// Lanes of the vector code emitted for one chunk of a vectorized loop.
constexpr int kMaxVectorWidth = 64;
// Vector loads whose elements lie this many elements apart (or fewer) load the span they cover
// and shuffle; larger strides gather.
constexpr int64_t kMaxStridedLoad = 4;
// Local buffers up to this size live on the stack; larger ones on the heap.
constexpr int64_t kMaxStackBufferBytes = 64 * 1024;
// Unrolled loops are replicated while the product of the extents of the enclosing replicated
// loops stays within kMaxUnrollProduct and the replicated code within kMaxUnrolledWork
// (EstimateWork units); beyond that they are plain loops (compile time grows fast with code
// size).
constexpr int64_t kMaxUnrollProduct = 64;
constexpr int64_t kMaxUnrolledWork = 4096;

// What a kernel generated for a GPU (nvptx_codegen.cc) is launched with: the extent of each
// thread index, indexed by ThreadIndexSlot (blockIdx.x/y/z, then threadIdx.x/y/z).
struct GpuLaunch {
  int64_t extents[6] = {1, 1, 1, 1, 1, 1};
};
// The slot of a thread-binding loop kind in GpuLaunch::extents.
int ThreadIndexSlot(ir::ForKind kind);

// The "shared" buffers a statement reads and writes (gpu_block_codegen.cc): what decides where
// the threads of a block must meet at a barrier.
struct SharedAccesses {
  std::set<const ir::BufferNode*> reads, writes;
  bool empty() const { return reads.empty() && writes.empty(); }
  // True when `later` touches a buffer this one touched and one of the two writes it.
  bool ConflictsWith(const SharedAccesses& later) const;
  // True when a second execution of the statement would conflict with the first.
  bool SelfConflicts() const { return ConflictsWith(*this); }
  void Add(const SharedAccesses& other);
};
SharedAccesses SharedAccessesOf(const ir::Stmt& s);

// A basic block created without a parent, so that it can be placed after the code emitted
// before it (a loop's exit, an if's merge). Insert() appends it to the function. If emitting
// the code before it throws, the destructor appends it instead, so that the function (discarded
// with the failed module) owns it rather than nobody.
class PendingBlock {
 public:
  PendingBlock(llvm::LLVMContext& context, const llvm::Twine& name, llvm::Function* function)
      : block_(llvm::BasicBlock::Create(context, name)), function_(function) {}
  ~PendingBlock() {
    if (block_->getParent() == nullptr) block_->insertInto(function_);
  }
  PendingBlock(const PendingBlock&) = delete;
  PendingBlock& operator=(const PendingBlock&) = delete;

  llvm::BasicBlock* get() const { return block_; }
  void Insert() { block_->insertInto(function_); }

 private:
  llvm::BasicBlock* block_;
  llvm::Function* function_;
};

// A flat i64 index as sum(coefficient * term) + constant; terms in order of first appearance,
// each term an expression other than i64 +, - or multiplication by a constant.
struct IndexSum {
  std::vector<std::pair<ir::Expr, int64_t>> terms;
  int64_t constant = 0;
};

class KernelCodegen {
 public:
  // `gpu`: null for a CPU kernel; for a GPU kernel, the launch it is generated for (it must
  // outlive this object).
  KernelCodegen(llvm::Module& module, const ir::KernelFunction& kernel,
                const CodegenOptions& options, const FunctionAttributes& attributes,
                const GpuLaunch* gpu = nullptr);

  // Emits `void name(void** buffers)` for the kernel, or for a GPU kernel an NVPTX kernel entry
  // `void name(ptr buffer0, ptr buffer1, ...)` (one pointer per parameter). Throws Error
  // (without the kernel name; the caller adds it) on unsupported input.
  void Generate();

 private:
  // ---- types and constants (codegen_expr.cc)
  llvm::Type* ScalarType(ir::DataType dtype);  // bool is i1
  llvm::Type* MemoryType(ir::DataType dtype);  // bool is i8
  llvm::Type* TypeOf(ir::DataType dtype);      // scalar type, or a vector of it in vector code
  llvm::Value* Splat(llvm::Value* scalar);
  llvm::Value* LaneIndices();  // <0, 1, ..., width-1> of i64
  llvm::Value* Materialize(const CgValue& v);
  CgValue Uniform(llvm::Value* v, ir::DataType dtype) const;
  CgValue Vector(llvm::Value* v, ir::DataType dtype) const;
  // Applies `fn` lane-wise: to scalars when every argument is uniform, else to vectors.
  CgValue Apply(const std::vector<CgValue>& args, ir::DataType result,
                const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& fn);

  // ---- expressions (codegen_expr.cc)
  CgValue Eval(const ir::Expr& e);
  CgValue EvalVar(const ir::Expr& e);
  CgValue EvalLoad(const ir::Expr& e);
  CgValue EvalSelect(const ir::Expr& e);
  CgValue Binary(ir::ExprKind kind, const CgValue& a, const CgValue& b);
  // i64 +, -, * and floordiv/floormod by a constant on uniform or affine operands, keeping
  // affine forms and known multiples; nullopt when the general path must compute it.
  std::optional<CgValue> IndexArithmetic(ir::ExprKind kind, const CgValue& a, const CgValue& b);
  llvm::Value* BinaryOp(ir::ExprKind kind, ir::DataType dtype, llvm::Value* a, llvm::Value* b);
  llvm::Value* IntegerDivision(ir::ExprKind kind, bool is_signed, llvm::Value* a, llvm::Value* b);
  CgValue Cast(const CgValue& v, ir::DataType to);
  llvm::Value* CastOp(ir::DataType from, ir::DataType to, llvm::Value* v);
  // Truth value as the interpreter sees it (non-zero after truncation toward zero).
  CgValue ToBool(const CgValue& v);
  // Flat element offset of buffer[indices] (i64).
  CgValue FlatOffset(const ir::Buffer& buffer, const std::vector<ir::Expr>& indices);
  // sum += scale * e, looking through i64 +, - and multiplication by a constant, block
  // iterators (iterator_bindings_) and the counters of replicated loops; false on overflow.
  bool AddToIndexSum(const ir::Expr& e, int64_t scale, IndexSum* sum);
  llvm::Value* BufferPointer(const ir::Buffer& buffer);
  // A load at constant indices of a parameter the kernel never writes (the dynamic size of
  // kernels/dynamic_extent.h, a scalar operand), read once in the current function's entry block
  // so that no loop reloads it; null for any other load.
  llvm::Value* HoistedParameterLoad(const ir::Expr& load);
  // True for a kernel parameter no statement of the kernel writes.
  bool IsReadOnlyParameter(const ir::BufferNode* buffer);
  CgValue LoadElements(const ir::Buffer& buffer, const CgValue& offset);
  // `arm` evaluated with its loads guarded by the i1 `wanted` (see load_guard_).
  CgValue EvalGuarded(const ir::Expr& arm, llvm::Value* wanted);
  void StoreElements(const ir::Buffer& buffer, const CgValue& offset, const CgValue& value);
  // True when `buffer` is a stack array (a "local" buffer) and the lanes of `offset` (stride 1,
  // constant first lane) all lie inside it.
  bool InStackArray(const ir::Buffer& buffer, const CgValue& offset);
  llvm::Value* AllLanesMask();
  // `lanes` restricted to the active lanes.
  llvm::Value* MaskAnd(llvm::Value* lanes);

  // ---- intrinsics (codegen_math.cc)
  CgValue EvalCall(const ir::Expr& e);
  // checked_index(index, extent) (ir/kernel/expr.h): the wrapped index, and on CPUs a call of
  // tandem_index_error for each active lane out of range (which then reads position 0).
  CgValue CheckedIndex(const ir::Expr& e);
  llvm::Value* MathFunction(const std::string& name, ir::DataType dtype,
                            const std::vector<llvm::Value*>& args);
  llvm::Value* ExpF32(llvm::Value* x);
  llvm::Value* ErfF32(llvm::Value* x);
  llvm::Value* SigmoidF32(llvm::Value* x);
  llvm::Value* TanhF32(llvm::Value* x);
  llvm::Value* LibmCall(const std::string& function, llvm::Value* x);
  llvm::Value* Polynomial(llvm::Value* x, const std::vector<double>& coefficients);
  llvm::Value* FloatConst(llvm::Type* type, double value);

  // ---- statements (codegen_stmt.cc)
  void Emit(const ir::Stmt& s);
  void EmitFor(const ir::Stmt& loop);
  // The loop by its kind (EmitFor handles what applies to every kind).
  void EmitForKind(const ir::Stmt& loop);
  void EmitSerialFor(const ir::ForNode* loop);
  // The trip count of a loop whose whole body is `if (loop_var < bound)` without an else (the
  // guard kernels/dynamic_extent.h puts on loops over a dynamic axis): min(extent, bound),
  // at least 0, evaluated before the loop. Null for any other loop or a bound that differs
  // between vector lanes.
  llvm::Value* GuardedTripCount(const ir::ForNode* loop);
  // The iterations of a loop whose whole body is `if (condition)` without an else, the
  // condition on the loop variable and values the loop does not write (the guard of a loop that
  // fuses a dynamic axis under another): counted by a loop that evaluates the condition alone,
  // before the loop. Null for any other loop.
  llvm::Value* GuardedIterationCount(const ir::ForNode* loop);
  // The trip count of a loop run over its compacted numbering (kernels/compact_guarded_loops.h):
  // the number of active iterations, in [0, extent], evaluated before the loop. Null when that
  // number differs between vector lanes (the loop then runs as written).
  llvm::Value* CompactedTripCount(const ir::ForNode* loop, const kernels::CompactedLoop& compacted);
  // The digits of a compacted loop's active iteration number, one per place, lowest first, in
  // allocas: set to those of `begin` (before the loop), then advanced by one per iteration, so
  // that an iteration divides by no run-time radix.
  struct CompactedDigits {
    std::vector<llvm::Value*> radices;
    std::vector<llvm::AllocaInst*> digits;
  };
  CompactedDigits StartCompactedDigits(const kernels::CompactedLoop& compacted, llvm::Value* begin);
  // One iteration of a compacted loop: its variable bound to the iteration `digits` hold, the
  // body, then the digits advanced to the next active iteration.
  void EmitCompactedIteration(const ir::ForNode* loop, const kernels::CompactedLoop& compacted,
                              const CompactedDigits& digits);
  // A loop over [begin, end) in the current function; `body` receives the i64 counter.
  void EmitLoop(llvm::Value* begin, llvm::Value* end, const std::string& name,
                const std::function<void(llvm::Value*)>& body, bool guard_empty = false);
  void EmitParallel(const ir::ForNode* loop);
  // A loop bound to a GPU thread index: its variable is that index (guarded when the launch
  // extent exceeds the loop's). Error outside GPU code generation.
  void EmitThreadBound(const ir::ForNode* loop);
  // The GPU kernel entry (Generate for a GPU kernel).
  void GenerateGpuKernel(const std::set<const ir::BufferNode*>& written);
  void EmitBlock(const ir::BlockRealizeNode* realize);
  // Prefetches of what the block's reads load further along the innermost loop annotated with
  // ir::kPrefetchDistanceKey (codegen_prefetch.cc); nothing outside such a loop, in scalar or
  // GPU code. Called with the block's iterators bound.
  void EmitPrefetches(const ir::Block& block);
  void EmitStore(const ir::StoreNode* store);
  // Runs `then_case` where `condition` holds and `else_case` (may be empty) elsewhere: a branch
  // when the condition is uniform, masks when it differs between lanes.
  void EmitConditional(const CgValue& condition, const std::function<void()>& then_case,
                       const std::function<void()>& else_case);
  // Allocates a block buffer (zero-filled, but for "shared" ones); returns true when it must be
  // freed.
  bool AllocateBuffer(const ir::Buffer& buffer, llvm::Value** pointer);

  // ---- GPU thread blocks (gpu_block_codegen.cc)
  // A "shared" buffer of a GPU kernel: an array in the thread block's shared memory (address
  // space 3). (CPU code allocates shared buffers like global ones.)
  llvm::Value* AllocateShared(const ir::Buffer& buffer, int64_t count);
  // The statements of a sequence every thread of a block runs, with a barrier before each one
  // that touches shared memory another statement since the last barrier touched in a conflicting
  // way (one of the two writing).
  void EmitBlockLevelSequence(const std::vector<ir::Stmt>& statements);
  void EmitBarrier();
  void FreeBuffer(llvm::Value* pointer);
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, const std::string& name);
  // The value a loop variable of `var`'s dtype takes for the i64 counter value `counter`.
  CgValue LoopVarValue(const ir::Var& var, const CgValue& counter);
  llvm::Function* CreateFunction(const std::string& name, llvm::FunctionType* type, bool internal);
  // Sets "min-legal-vector-width" on every function created so far from max_vector_bits_.
  void SetVectorWidthAttributes();

  // ---- vectorized loops (codegen_vector.cc)
  // True when the lanes of `loop` are provably independent (see codegen.h).
  bool CanVectorize(const ir::ForNode* loop) const;
  void EmitVectorized(const ir::ForNode* loop);

  llvm::Module& module_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> builder_;
  const ir::KernelFunction& kernel_;
  const CodegenOptions& options_;
  FunctionAttributes attributes_;
  const GpuLaunch* gpu_ = nullptr;  // null: CPU code

  llvm::Function* function_ = nullptr;       // function being emitted
  llvm::BasicBlock* entry_block_ = nullptr;  // its entry block (allocas go there)
  std::unordered_map<const ir::ExprNode*, CgValue> vars_;
  std::unordered_map<const ir::BufferNode*, llvm::Value*> buffers_;
  int width_ = 0;                // lanes of the vector code being emitted; 0 in scalar code
  llvm::Value* mask_ = nullptr;  // active lanes (<width x i1>); null when all are active
  // An i1 that is false where the loads being emitted are not wanted (the unselected arm of a
  // select on a uniform condition, evaluated without a branch): they then read a valid element
  // instead of their own. Null when every load is wanted.
  llvm::Value* load_guard_ = nullptr;
  std::optional<std::unordered_set<const ir::BufferNode*>> written_buffers_;  // computed once
  std::map<std::tuple<llvm::Function*, const ir::BufferNode*, int64_t>, llvm::Value*>
      hoisted_loads_;
  struct PrefetchLoop {
    const ir::ForNode* loop;
    int64_t distance;
  };
  std::vector<PrefetchLoop> prefetch_loops_;  // annotated loops around the code being emitted
  bool in_parallel_ = false;                  // emitting an outlined parallel body
  int parallel_count_ = 0;
  int64_t unroll_product_ = 1;  // product of the extents of the loops being replicated
  int thread_loop_depth_ = 0;   // GPU: threadIdx-bound loops around the code being emitted
  int64_t shared_bytes_ = 0;    // GPU: shared memory the kernel's "shared" buffers take
  ir::VarMap unrolled_values_;  // the loop variables of the copy being emitted
  // The i64 iterators of the blocks being emitted and the expressions they are bound to.
  ir::VarMap iterator_bindings_;
  // Widest vector of buffer elements loaded or stored (bits); functions created so far.
  int64_t max_vector_bits_ = 0;
  std::vector<llvm::Function*> functions_;
  // Number of loads and stores of each buffer in the whole kernel.
  std::unordered_map<const ir::BufferNode*, int> access_counts_;
  // Parameters an executable may pass in one another's memory (ir::InPlacePairs): not noalias.
  std::unordered_set<const ir::BufferNode*> may_alias_;
};

// A rough size of the code `s` becomes after LLVM's full unrolling of short loops: expression
// nodes times the iterations that may be unrolled. With the variables of `constants` bound
// (and for each copy of an unrolled loop that selects among arms), a select whose condition
// is then constant counts only its taken arm, as only that one is emitted.
int64_t EstimateWork(const ir::Stmt& s, const ir::VarMap& constants = {});

// Loads and stores (by buffer) in `s`, counted per buffer.
std::unordered_map<const ir::BufferNode*, int> CountAccesses(const ir::Stmt& s);

// True when the two expressions have the same structure (variables and buffers by identity).
bool ExprEqual(const ir::Expr& a, const ir::Expr& b);

// An i64 expression as sum(coefficient * variable) + sum(coefficient * opaque term) + constant
// (codegen_vector.cc). Linearize looks through +, - and multiplication by a constant; anything
// else (and any non-i64 expression) is one opaque term.
struct LinearForm {
  int64_t constant = 0;
  std::map<const ir::ExprNode*, int64_t> coefficients;
  std::vector<std::pair<ir::Expr, int64_t>> opaque;
};
LinearForm Linearize(const ir::Expr& e);
void AddScaled(LinearForm* into, const LinearForm& form, int64_t scale);
bool FormsEqual(const LinearForm& a, const LinearForm& b);

// The kernel with its "local" buffers compacted (compact_buffers.cc): a local buffer whose
// accesses all lie under one statement S and touch, per iteration of the loops around S, a
// small box of the buffer that moves with those loops without ever overlapping the box of
// another iteration, is replaced by a buffer of the box's size allocated by a new iterator-less
// block wrapping S (zero-filled at each entry, as the box is fresh in the original program), its
// indices shifted by the box's corner. Register tiles staged through cache_write become small
// stack arrays indexed by constants after unrolling, which LLVM promotes to registers. Buffers
// for which this cannot be proven stay as they are.
ir::KernelFunction CompactLocalBuffers(const ir::KernelFunction& kernel);
// The same for a kernel for the GPU: every loop bound to a threadIdx index first takes that
// index's one variable; "local" buffers become one tile per thread (each thread has its own
// copy, so tiles of different threads or thread blocks need not be apart) and "shared" ones one
// tile per thread block. A "shared" buffer that cannot be compacted stays whole, which the code
// generator refuses when it exceeds the block's shared memory.
ir::KernelFunction CompactGpuBuffers(const ir::KernelFunction& kernel);

}  // namespace tandem::backends::codegen
