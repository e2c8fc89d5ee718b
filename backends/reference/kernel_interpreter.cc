#include "backends/reference/kernel_interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "ir/error.h"
#include "ir/kernel/functor.h"

namespace tandem::backends {

using ir::Error;
using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

namespace {

// A scalar value: integers (and bools) in `i`, floats in `f`.
struct Scalar {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
  double AsDouble() const { return is_float ? f : static_cast<double>(i); }
  int64_t AsInt() const { return is_float ? static_cast<int64_t>(f) : i; }
};

Scalar Int(int64_t v) {
  return Scalar{false, v, 0};
}
Scalar Float(double v) {
  return Scalar{true, 0, v};
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Rounds a double to the precision of `dtype` so intermediate values behave as stored ones.
Scalar Normalize(ir::DataType dtype, Scalar v) {
  if (ir::IsFloat(dtype)) {
    double d = v.AsDouble();
    if (dtype == ir::DataType::kFloat32) d = static_cast<float>(d);
    if (dtype == ir::DataType::kFloat16)
      d = ir::HalfToFloat(ir::FloatToHalf(static_cast<float>(d)));
    return Float(d);
  }
  ir::Tensor probe(ir::Shape{1}, dtype);  // integer conversion rules of Tensor::SetDouble
  if (v.is_float) {
    probe.SetDouble(0, v.f);
    return Int(static_cast<int64_t>(probe.GetDouble(0)));
  }
  if (dtype == ir::DataType::kBool) return Int(v.i != 0);
  if (dtype == ir::DataType::kInt32) return Int(static_cast<int32_t>(v.i));
  if (dtype == ir::DataType::kInt8) return Int(static_cast<int8_t>(v.i));
  if (dtype == ir::DataType::kUInt8) return Int(static_cast<uint8_t>(v.i));
  return v;
}

// Which GPU thread touched each element of the buffers threads share, within one launch: the
// thread-block simulation's check that threads of a launch never write an element another thread
// of it writes or reads (nothing orders threads inside a launch; launches run one after another).
class ThreadAccessLog {
 public:
  // Starts tracking `buffer` (a parameter or a root allocation).
  void Track(const ir::Buffer& buffer) {
    owners_[buffer.get()].assign(static_cast<size_t>(ir::NumElements(buffer->shape)), kNobody);
  }
  // A new launch: no element touched yet.
  void StartLaunch() {
    for (auto& [buffer, owners] : owners_) std::fill(owners.begin(), owners.end(), kNobody);
  }
  // A barrier of the thread blocks: what threads did to "shared" buffers before it is ordered
  // before what they do after it.
  void Barrier() {
    for (auto& [buffer, owners] : owners_) {
      if (buffer->scope == "shared") std::fill(owners.begin(), owners.end(), kNobody);
    }
  }
  // An access by thread `thread` (0: not inside a thread-bound loop, not checked) of the thread
  // block `block` (equal to `thread` for code the whole block runs, outside threadIdx loops).
  // Every thread of a block runs the block's own code on its own copy of a "local" buffer, so
  // such an element written by the block holds the same value in every thread: its threads may
  // read it, but a thread writing it (or the block reading what one thread wrote) would make the
  // copies differ, which one interpreted copy cannot show: both are errors.
  void Access(const ir::Buffer& buffer, int64_t offset, uint64_t thread, uint64_t block, bool write,
              const std::function<std::string()>& who) {
    if (thread == 0) return;
    auto it = owners_.find(buffer.get());
    if (it == owners_.end()) return;
    uint64_t& owner = it->second[static_cast<size_t>(offset)];
    if (buffer->scope == "local") {
      bool block_wide = owner != kNobody && (owner & kBlockWide);
      uint64_t owner_block = owner & ~(kWritten | kBlockWide);
      if (thread == block) {
        if (!write && owner != kNobody && (!block_wide || owner_block != (block & ~kWritten))) {
          throw Error(
              fmt::format("{} reads {}[{}] (local) outside its threads' loops, which one "
                          "thread wrote: the threads' copies differ",
                          who(), buffer->name, offset));
        }
        if (write) owner = (block & ~(kWritten | kBlockWide)) | kBlockWide | kWritten;
        return;
      }
      if (block_wide) {
        if (write || owner_block != (block & ~(kWritten | kBlockWide))) {
          throw Error(fmt::format(
              "{} {} {}[{}] (local), which its thread block {}: the threads' "
              "copies would differ",
              who(), write ? "writes" : "reads", buffer->name, offset,
              owner_block != (block & ~(kWritten | kBlockWide)) ? "never wrote (another block did)"
                                                                : "wrote for all of them"));
        }
        return;
      }
    }
    thread &= ~(kWritten | kBlockWide);
    if (owner != kNobody && (owner & ~kWritten) != thread && (write || (owner & kWritten))) {
      throw Error(fmt::format("race: {} {} {}[{}], which another thread of the same launch {}",
                              who(), write ? "writes" : "reads", buffer->name, offset,
                              owner & kWritten ? "writes" : "reads"));
    }
    if (owner == kNobody || write) owner = thread | (write ? kWritten : 0);
  }

 private:
  static constexpr uint64_t kNobody = ~uint64_t{0} >> 1;
  static constexpr uint64_t kWritten = uint64_t{1} << 63;
  static constexpr uint64_t kBlockWide = uint64_t{1} << 62;  // written by a whole thread block
  std::unordered_map<const ir::BufferNode*, std::vector<uint64_t>> owners_;
};

class Interpreter {
 public:
  void Bind(const ir::Buffer& buffer, const ir::Tensor& tensor) { buffers_[buffer.get()] = tensor; }

  // Checks accesses between GPU threads (a kernel with thread bindings) from now on: `shared`
  // are the buffers all threads see.
  void SimulateThreads(const std::vector<ir::Buffer>& shared) {
    simulate_threads_ = true;
    for (const ir::Buffer& buffer : shared) {
      if (buffer->scope != "local") log_.Track(buffer);
    }
  }

  void Exec(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto* loop = ir::As<ir::ForNode>(s);
        bool bound = ir::IsThreadBinding(loop->for_kind);
        // Sibling loops over the threads of a block, and the code the whole block runs between
        // them, are separated by barriers where they share "shared" data (the code generator
        // places them), so each outermost one starts and ends with the shared buffers'
        // accesses ordered.
        bool block_threads = bound && !ir::IsBlockIndex(loop->for_kind) && thread_loops_ == 0;
        if (block_threads) {
          log_.Barrier();
          block_ = thread_;
        }
        if (bound && !ir::IsBlockIndex(loop->for_kind)) ++thread_loops_;
        uint64_t outer = thread_;
        for (int64_t v = 0; v < loop->extent; ++v) {
          vars_[loop->loop_var.get()] = Int(v);
          if (bound) {
            // A thread is named by the values of the indices bound around it.
            thread_ = ((outer * 0x9E3779B97F4A7C15ull) ^
                       (static_cast<uint64_t>(loop->for_kind) << 56) ^ static_cast<uint64_t>(v)) |
                      1;
            bound_.push_back({loop->for_kind, v});
          }
          Exec(loop->body);
          if (bound) bound_.pop_back();
        }
        if (bound && !ir::IsBlockIndex(loop->for_kind)) --thread_loops_;
        if (block_threads) log_.Barrier();
        thread_ = outer;
        vars_.erase(loop->loop_var.get());
        break;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : ir::As<ir::SeqNode>(s)->stmts) Exec(c);
        break;
      case StmtKind::kStore: {
        const auto* store = ir::As<ir::StoreNode>(s);
        Scalar value = Eval(store->value);
        int64_t offset = Offset(store->buffer, store->indices);
        if (simulate_threads_) LogAccess(store->buffer, offset, true);
        Tensor(store->buffer).SetDouble(offset, value.AsDouble());
        if (!value.is_float) SetInt(store->buffer, offset, value.i);
        break;
      }
      case StmtKind::kIfThenElse: {
        const auto* branch = ir::As<ir::IfThenElseNode>(s);
        if (Eval(branch->condition).AsInt() != 0) {
          Exec(branch->then_case);
        } else {
          Exec(branch->else_case);
        }
        break;
      }
      case StmtKind::kBlockRealize:
        ExecBlock(ir::As<ir::BlockRealizeNode>(s));
        break;
    }
  }

 private:
  void LogAccess(const ir::Buffer& buffer, int64_t offset, bool write) {
    log_.Access(buffer, offset, thread_, thread_loops_ == 0 ? thread_ : block_, write, [&] {
      std::string who = "thread (";
      for (size_t k = 0; k < bound_.size(); ++k) {
        who +=
            fmt::format("{}{}={}", k ? ", " : "", ir::ToString(bound_[k].first), bound_[k].second);
      }
      return who + ")";
    });
  }

  void ExecBlock(const ir::BlockRealizeNode* realize) {
    const ir::Block& block = realize->block;
    if (simulate_threads_ && !in_root_) {
      // The root block: each of its statements is one launch.
      in_root_ = true;
      // "local" buffers too: the GPU gives each thread its own copy, so an element two threads
      // of a launch touch would be two elements there.
      for (const ir::Buffer& b : block->alloc_buffers) {
        buffers_[b.get()] = ir::Tensor(b->shape, b->dtype);
        log_.Track(b);
      }
      const auto* seq = ir::As<ir::SeqNode>(block->body);
      for (const Stmt& launch : seq ? seq->stmts : std::vector<Stmt>{block->body}) {
        log_.StartLaunch();
        Exec(launch);
      }
      return;
    }
    std::vector<Scalar> values;
    for (const Expr& v : realize->iter_values) values.push_back(Eval(v));
    if (Eval(realize->predicate).AsInt() == 0) return;
    bool first_reduction = true;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      const ir::IterVar& iv = block->iter_vars[k];
      if (values[k].i < 0 || values[k].i >= iv.extent) {
        throw Error(fmt::format("block '{}': iterator '{}' bound to {} outside [0, {})",
                                block->name, iv.var->name, values[k].i, iv.extent));
      }
      if (iv.kind == ir::IterKind::kReduction && values[k].i != 0) first_reduction = false;
      vars_[iv.var.get()] = values[k];
    }
    for (const ir::Buffer& b : block->alloc_buffers) {
      buffers_[b.get()] = ir::Tensor(b->shape, b->dtype);
    }
    if (block->init && first_reduction) Exec(block->init);
    Exec(block->body);
    for (const ir::Buffer& b : block->alloc_buffers) buffers_.erase(b.get());
    for (const ir::IterVar& iv : block->iter_vars) vars_.erase(iv.var.get());
  }

  ir::Tensor& Tensor(const ir::Buffer& buffer) {
    auto it = buffers_.find(buffer.get());
    if (it == buffers_.end()) {
      throw Error(
          fmt::format("buffer '{}' is used outside the block that allocates it", buffer->name));
    }
    return it->second;
  }

  void SetInt(const ir::Buffer& buffer, int64_t offset, int64_t value) {
    ir::Tensor& t = Tensor(buffer);
    if (t.dtype() == ir::DataType::kInt64) t.data<int64_t>()[offset] = value;
  }

  int64_t Offset(const ir::Buffer& buffer, const std::vector<Expr>& indices) {
    int64_t offset = 0;
    for (size_t k = 0; k < indices.size(); ++k) {
      int64_t index = Eval(indices[k]).AsInt();
      if (index < 0 || index >= buffer->shape[k]) {
        std::vector<int64_t> all;
        for (const Expr& e : indices) all.push_back(Eval(e).AsInt());
        throw Error(fmt::format("out-of-bounds access {}[{}] (shape {})", buffer->name,
                                fmt::join(all, ", "), ir::ShapeToString(buffer->shape)));
      }
      offset = offset * buffer->shape[k] + index;
    }
    return offset;
  }

  Scalar Eval(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm:
        return Int(e->int_value);
      case ExprKind::kFloatImm:
        return Float(e->float_value);
      case ExprKind::kVar: {
        auto it = vars_.find(e.get());
        if (it == vars_.end()) throw Error(fmt::format("variable '{}' is not bound here", e->name));
        return it->second;
      }
      case ExprKind::kLoad: {
        int64_t offset = Offset(e->buffer, e->operands);
        if (simulate_threads_) LogAccess(e->buffer, offset, false);
        const ir::Tensor& t = Tensor(e->buffer);
        if (t.dtype() == ir::DataType::kInt64) return Int(t.data<int64_t>()[offset]);
        double d = t.GetDouble(offset);
        return ir::IsFloat(e->dtype) ? Float(d) : Int(static_cast<int64_t>(d));
      }
      case ExprKind::kCast:
        return Normalize(e->dtype, Eval(e->operands[0]));
      case ExprKind::kNot:
        return Int(Eval(e->operands[0]).AsInt() == 0);
      case ExprKind::kSelect:
        return Eval(e->operands[0]).AsInt() != 0 ? Eval(e->operands[1]) : Eval(e->operands[2]);
      case ExprKind::kCall:
        return EvalCall(e);
      default:
        return EvalBinary(e);
    }
  }

  Scalar EvalCall(const Expr& e) {
    if (e->name == "checked_index") return EvalCheckedIndex(e);
    std::vector<double> args;
    for (const Expr& a : e->operands) args.push_back(Eval(a).AsDouble());
    auto need = [&](size_t n) {
      if (args.size() != n) {
        throw Error(
            fmt::format("intrinsic '{}' takes {} arguments but has {}", e->name, n, args.size()));
      }
    };
    double r;
    const std::string& f = e->name;
    if (f == "pow") {
      need(2);
      r = std::pow(args[0], args[1]);
    } else {
      need(1);
      double x = args[0];
      if (f == "exp")
        r = std::exp(x);
      else if (f == "log")
        r = std::log(x);
      else if (f == "sqrt")
        r = std::sqrt(x);
      else if (f == "erf")
        r = std::erf(x);
      else if (f == "tanh")
        r = std::tanh(x);
      else if (f == "sigmoid")
        r = 1.0 / (1.0 + std::exp(-x));
      else if (f == "abs")
        r = std::abs(x);
      else if (f == "floor")
        r = std::floor(x);
      else if (f == "ceil")
        r = std::ceil(x);
      else if (f == "round")
        r = std::nearbyint(x);  // the default rounding mode: halves to even
      else
        throw Error(fmt::format("unknown intrinsic '{}'", f));
    }
    return Normalize(e->dtype, Float(r));
  }

  // checked_index(index, extent): index, or index + extent for a negative one; an index
  // outside [-extent, extent) is an error naming it (see ir/kernel/expr.h).
  Scalar EvalCheckedIndex(const Expr& e) {
    if (e->operands.size() != 2) {
      throw Error(fmt::format("intrinsic 'checked_index' takes 2 arguments but has {}",
                              e->operands.size()));
    }
    int64_t index = Eval(e->operands[0]).AsInt();
    int64_t extent = Eval(e->operands[1]).AsInt();
    if (index < -extent || index >= extent) {
      throw Error(fmt::format("index {} is out of range [{}, {})", index, -extent, extent));
    }
    return Int(index < 0 ? index + extent : index);
  }

  Scalar EvalBinary(const Expr& e) {
    Scalar a = Eval(e->operands[0]), b = Eval(e->operands[1]);
    bool fl = a.is_float || b.is_float;
    switch (e->kind) {
      case ExprKind::kAdd:
        return Normalize(e->dtype, fl ? Float(a.AsDouble() + b.AsDouble()) : Int(a.i + b.i));
      case ExprKind::kSub:
        return Normalize(e->dtype, fl ? Float(a.AsDouble() - b.AsDouble()) : Int(a.i - b.i));
      case ExprKind::kMul:
        return Normalize(e->dtype, fl ? Float(a.AsDouble() * b.AsDouble()) : Int(a.i * b.i));
      case ExprKind::kDiv:
        if (fl) return Normalize(e->dtype, Float(a.AsDouble() / b.AsDouble()));
        if (b.i == 0) throw Error("integer division by zero");
        return Int(a.i / b.i);
      case ExprKind::kFloorDiv:
        if (fl) return Normalize(e->dtype, Float(std::floor(a.AsDouble() / b.AsDouble())));
        if (b.i == 0) throw Error("integer division by zero in floordiv");
        return Int(FloorDivInt(a.i, b.i));
      case ExprKind::kFloorMod:
        if (fl) {
          double x = a.AsDouble(), y = b.AsDouble();
          return Normalize(e->dtype, Float(x - std::floor(x / y) * y));
        }
        if (b.i == 0) throw Error("integer division by zero in floormod");
        return Int(a.i - FloorDivInt(a.i, b.i) * b.i);
      case ExprKind::kMin:
        return fl ? Float(std::min(a.AsDouble(), b.AsDouble())) : Int(std::min(a.i, b.i));
      case ExprKind::kMax:
        return fl ? Float(std::max(a.AsDouble(), b.AsDouble())) : Int(std::max(a.i, b.i));
      case ExprKind::kEQ:
        return Int(fl ? a.AsDouble() == b.AsDouble() : a.i == b.i);
      case ExprKind::kNE:
        return Int(fl ? a.AsDouble() != b.AsDouble() : a.i != b.i);
      case ExprKind::kLT:
        return Int(fl ? a.AsDouble() < b.AsDouble() : a.i < b.i);
      case ExprKind::kLE:
        return Int(fl ? a.AsDouble() <= b.AsDouble() : a.i <= b.i);
      case ExprKind::kGT:
        return Int(fl ? a.AsDouble() > b.AsDouble() : a.i > b.i);
      case ExprKind::kGE:
        return Int(fl ? a.AsDouble() >= b.AsDouble() : a.i >= b.i);
      case ExprKind::kAnd:
        return Int(a.AsInt() != 0 && b.AsInt() != 0);
      case ExprKind::kOr:
        return Int(a.AsInt() != 0 || b.AsInt() != 0);
      default:
        throw Error(fmt::format("cannot evaluate expression kind '{}'", ir::ToString(e->kind)));
    }
  }

  std::unordered_map<const ir::ExprNode*, Scalar> vars_;
  std::unordered_map<const ir::BufferNode*, ir::Tensor> buffers_;
  // Thread-block simulation (kernels with thread bindings).
  bool simulate_threads_ = false;
  bool in_root_ = false;
  uint64_t thread_ = 0;   // the thread running now; 0 outside thread-bound loops
  int thread_loops_ = 0;  // threadIdx-bound loops around the statement running now
  uint64_t block_ = 0;    // inside threadIdx loops: the thread running the block's own code
  std::vector<std::pair<ir::ForKind, int64_t>> bound_;
  ThreadAccessLog log_;
};

}  // namespace

void RunKernelReference(const ir::KernelFunction& fn, const std::vector<ir::Tensor>& args) {
  if (args.size() != fn.params.size()) {
    throw Error(fmt::format("kernel '{}' takes {} buffers but {} tensors were given", fn.name,
                            fn.params.size(), args.size()));
  }
  Interpreter interpreter;
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Buffer& b = fn.params[i];
    if (args[i].shape() != b->shape || args[i].dtype() != b->dtype) {
      throw Error(fmt::format("kernel '{}': argument {} is {} but buffer '{}' is {}{}", fn.name, i,
                              ir::ToString(args[i].type()), b->name, ir::ToString(b->dtype),
                              ir::ShapeToString(b->shape)));
    }
    interpreter.Bind(b, args[i]);
  }
  bool bound = false;
  ir::VisitStmtTree(fn.body, [&](const Stmt& s) {
    const auto* loop = ir::As<ir::ForNode>(s);
    bound = bound || (loop && ir::IsThreadBinding(loop->for_kind));
  });
  if (bound) interpreter.SimulateThreads(fn.params);
  try {
    interpreter.Exec(fn.body);
  } catch (const Error& e) {
    throw Error(fmt::format("kernel '{}': {}", fn.name, e.message()), e.where());
  }
}

std::vector<ir::Tensor> RunKernelReference(const ir::KernelFunction& fn,
                                           const std::vector<ir::Tensor>& inputs,
                                           bool allocate_outputs) {
  std::vector<ir::Tensor> args = inputs;
  std::vector<ir::Tensor> outputs;
  if (allocate_outputs) {
    size_t first_output = fn.params.size() - static_cast<size_t>(fn.num_outputs);
    for (size_t i = first_output; i < fn.params.size(); ++i) {
      outputs.emplace_back(fn.params[i]->shape, fn.params[i]->dtype);
      args.push_back(outputs.back());
    }
  }
  RunKernelReference(fn, args);
  return outputs;
}

}  // namespace tandem::backends
