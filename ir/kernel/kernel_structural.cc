#include "ir/kernel/kernel_structural.h"

#include <fmt/format.h>

#include <bit>
#include <sstream>
#include <unordered_map>

#include "ir/structural.h"

namespace tandem::ir {
namespace {

class Canonicalizer {
 public:
  std::string Run(const KernelFunction& fn) {
    Line(fmt::format("kernel {} outputs {}", fn.name, fn.num_outputs));
    for (const Buffer& b : fn.params) Line("param " + DefineBuffer(b));
    Line("attrs " + ToString(fn.attrs));
    Visit(fn.body);
    return out_.str();
  }

 private:
  void Line(const std::string& s) { out_ << s << '\n'; }

  std::string DefineVar(const Var& v) {
    int id = static_cast<int>(vars_.size());
    vars_[v.get()] = id;
    return fmt::format("%{}", id);
  }
  std::string DefineBuffer(const Buffer& b) {
    int id = static_cast<int>(buffers_.size());
    buffers_[b.get()] = id;
    return fmt::format("#{} {}{} {}", id, ToString(b->dtype), ShapeToString(b->shape), b->scope);
  }
  std::string BufferRef(const Buffer& b) {
    auto it = buffers_.find(b.get());
    return it == buffers_.end() ? "#free:" + b->name : fmt::format("#{}", it->second);
  }

  std::string E(const Expr& e) {
    if (!e.defined()) return "null";
    switch (e->kind) {
      case ExprKind::kIntImm:
        return fmt::format("{}:{}", e->int_value, ToString(e->dtype));
      case ExprKind::kFloatImm:
        return fmt::format("f{:x}:{}", std::bit_cast<uint64_t>(e->float_value), ToString(e->dtype));
      case ExprKind::kVar: {
        auto it = vars_.find(e.get());
        return it == vars_.end() ? "%free:" + e->name : fmt::format("%{}", it->second);
      }
      case ExprKind::kLoad: {
        std::string s = BufferRef(e->buffer) + "[";
        for (const Expr& i : e->operands) s += E(i) + ",";
        return s + "]";
      }
      default: {
        std::string s = "(" + ToString(e->kind);
        if (!e->name.empty()) s += " " + e->name;
        s += ":" + ToString(e->dtype);
        for (const Expr& o : e->operands) s += " " + E(o);
        return s + ")";
      }
    }
  }

  void Visit(const Stmt& s) {
    if (!s) {
      Line("null");
      return;
    }
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto* f = As<ForNode>(s);
        Line(fmt::format("for {} {} {} {}", DefineVar(f->loop_var), f->extent,
                         ToString(f->for_kind), ToString(f->annotations)));
        Visit(f->body);
        Line("end");
        break;
      }
      case StmtKind::kSeq:
        Line("seq");
        for (const Stmt& c : As<SeqNode>(s)->stmts) Visit(c);
        Line("end");
        break;
      case StmtKind::kStore: {
        const auto* st = As<StoreNode>(s);
        std::string idx;
        for (const Expr& i : st->indices) idx += E(i) + ",";
        Line(fmt::format("store {}[{}] = {}", BufferRef(st->buffer), idx, E(st->value)));
        break;
      }
      case StmtKind::kIfThenElse: {
        const auto* b = As<IfThenElseNode>(s);
        Line("if " + E(b->condition));
        Visit(b->then_case);
        Visit(b->else_case);
        Line("end");
        break;
      }
      case StmtKind::kBlockRealize: {
        const auto* r = As<BlockRealizeNode>(s);
        std::string values;
        for (const Expr& v : r->iter_values) values += E(v) + ",";
        Line(fmt::format("realize [{}] if {}", values, E(r->predicate)));
        const Block& b = r->block;
        std::string iters;
        for (const IterVar& iv : b->iter_vars) {
          iters += fmt::format("{}:{}:{},", DefineVar(iv.var), iv.extent, ToString(iv.kind));
        }
        Line(fmt::format("block {} [{}] {}", b->name, iters, ToString(b->annotations)));
        for (const Buffer& a : b->alloc_buffers) Line("alloc " + DefineBuffer(a));
        for (const auto* regions : {&b->reads, &b->writes}) {
          std::string text = regions == &b->reads ? "reads" : "writes";
          for (const BufferRegion& region : *regions) {
            text += " " + BufferRef(region.buffer) + "[";
            for (const Range& range : region.region)
              text += E(range.min) + ":" + E(range.extent) + ",";
            text += "]";
          }
          Line(text);
        }
        Line("init");
        Visit(b->init);
        Line("body");
        Visit(b->body);
        Line("end");
        break;
      }
    }
  }

  std::ostringstream out_;
  std::unordered_map<const ExprNode*, int> vars_;
  std::unordered_map<const BufferNode*, int> buffers_;
};

}  // namespace

std::string CanonicalForm(const KernelFunction& fn) {
  return Canonicalizer().Run(fn);
}

bool StructuralEqual(const KernelFunction& a, const KernelFunction& b) {
  return CanonicalForm(a) == CanonicalForm(b);
}

uint64_t StructuralHash(const KernelFunction& fn) {
  StableHasher hasher;
  hasher.Update(CanonicalForm(fn));
  return hasher.Digest();
}

std::string StructuralDiff(const KernelFunction& a, const KernelFunction& b) {
  std::istringstream sa(CanonicalForm(a)), sb(CanonicalForm(b));
  std::string la, lb;
  int line = 1;
  while (true) {
    bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (!ga || !gb || la != lb) {
      return fmt::format("line {}: '{}' vs '{}'", line, ga ? la : "<end>", gb ? lb : "<end>");
    }
    ++line;
  }
}

}  // namespace tandem::ir
