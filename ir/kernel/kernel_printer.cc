#include "ir/kernel/kernel_printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/kernel/kernel_parser.h"
#include "ir/lexer.h"

namespace tandem::ir {
namespace {

// Binding strength of an expression's text: an operand whose text binds less tightly than its
// position needs is parenthesized.
enum Precedence { kOr = 1, kAnd, kCompare, kAdditive, kMultiplicative, kUnary, kPrimary };

Precedence PrecedenceOf(ExprKind kind) {
  switch (kind) {
    case ExprKind::kOr:
      return kOr;
    case ExprKind::kAnd:
      return kAnd;
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
      return kCompare;
    case ExprKind::kAdd:
    case ExprKind::kSub:
      return kAdditive;
    case ExprKind::kMul:
    case ExprKind::kDiv:
      return kMultiplicative;
    case ExprKind::kNot:
      return kUnary;
    default:
      return kPrimary;
  }
}

std::string Suffix(DataType dtype, DataType fallback) {
  return dtype == fallback ? "" : fmt::format(":{}", ToString(dtype));
}

std::string FloatLiteral(double value, DataType dtype) {
  std::string text;
  auto bits = std::bit_cast<uint64_t>(value);
  if (std::isnan(value)) {
    if (bits == std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN())) {
      text = "nan";
    } else if (bits == std::bit_cast<uint64_t>(-std::numeric_limits<double>::quiet_NaN())) {
      text = "-nan";
    } else {  // a NaN payload: the bits, so it reads back exactly
      text = fmt::format("float_bits({})", std::bit_cast<int64_t>(value));
    }
  } else if (std::isinf(value)) {
    text = value > 0 ? "inf" : "-inf";
  } else {
    text = fmt::format("{}", value);  // shortest text that reads back to the same double
    if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  }
  return text + Suffix(dtype, DataType::kFloat32);
}

std::string IntLiteral(int64_t value, DataType dtype) {
  if (dtype == DataType::kBool && (value == 0 || value == 1)) return value ? "true" : "false";
  return std::to_string(value) + Suffix(dtype, DataType::kInt64);
}

// Writes expressions and statements; names variables and buffers. With `unique_names` each
// Var/Buffer object gets its own name when it is defined (name hint, then `_1`, `_2`, ...), and a
// variable used where nothing binds it is listed in the kernel's `free(...)` clause: by its name
// when it was defined earlier (a use outside its scope), else by its name hint (a free variable).
// Free-variable hints are reserved so that no defined variable takes one of them as its name.
class KernelPrinter {
 public:
  explicit KernelPrinter(bool unique_names) : unique_names_(unique_names) {}

  std::string Kernel(const KernelFunction& kernel) {
    // The free variables are known once the body has been printed; the reserved names must be
    // known before: print once to find them, then again with them reserved.
    KernelPrinter dry_run(true);
    dry_run.KernelText(kernel);
    reserved_ = std::move(dry_run.free_hints_);
    return KernelText(kernel);
  }

  std::string Expression(const Expr& e, int min_precedence = kOr) {
    if (!e.defined()) return "<null>";
    Precedence own = PrecedenceOf(e->kind);
    std::string text = Unparenthesized(e, own);
    return own < min_precedence ? "(" + text + ")" : text;
  }

 private:
  std::string KernelText(const KernelFunction& kernel) {
    size_t num_outputs = static_cast<size_t>(std::max(kernel.num_outputs, 0));
    size_t first_output = kernel.params.size() - std::min(num_outputs, kernel.params.size());
    std::vector<std::string> inputs, outputs;
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      (i < first_output ? inputs : outputs).push_back(BufferDecl(kernel.params[i], false));
    }
    out_.clear();
    List(kernel.body, 1);
    std::string body = std::move(out_);
    std::string head = fmt::format("kernel {}({}) -> ({})", text::NameText('@', kernel.name),
                                   fmt::join(inputs, ", "), fmt::join(outputs, ", "));
    if (!free_list_.empty()) head += fmt::format(" free({})", fmt::join(free_list_, ", "));
    if (!kernel.attrs.empty()) head += " attributes " + text::AttrDictText(kernel.attrs);
    return head + " {\n" + body + "}\n";
  }

  std::string Fresh(std::string hint, const char* fallback) {
    if (hint.empty()) hint = fallback;
    std::string name = hint;
    for (int k = 1; used_.count(name) != 0 || reserved_.count(name) != 0; ++k) {
      name = fmt::format("{}_{}", hint, k);
    }
    used_.insert(name);
    return name;
  }

  static std::string TypeSuffix(const Expr& v) {
    return v->dtype == DataType::kInt64 ? "" : ": " + ToString(v->dtype);
  }

  // A use of variable `v`.
  std::string VarName(const Expr& v) {
    if (!unique_names_) return text::NameText('%', v->name);
    auto named = var_names_.find(v.get());
    bool in_scope = false;
    for (const ExprNode* bound : scope_) in_scope = in_scope || bound == v.get();
    if (in_scope) return named->second;
    // Not bound here: a use outside its scope after its definition, or a free variable.
    std::string text = named != var_names_.end() ? named->second : text::NameText('%', v->name);
    if (named == var_names_.end()) free_hints_.insert(v->name);
    if (listed_free_.insert(text).second) free_list_.push_back(text + TypeSuffix(v));
    return text;
  }

  // A definition of `v` (a loop variable or block iterator); the caller unbinds it (shrinks
  // scope_) when it leaves the loop or block.
  std::string DefineVar(const Expr& v) {
    if (!v.defined()) return "%\"<null var>\"";
    auto [it, inserted] = var_names_.try_emplace(v.get());
    if (inserted) it->second = text::NameText('%', Fresh(v->name, "v"));
    scope_.push_back(v.get());
    return it->second;
  }

  std::string BufferName(const Buffer& b) {
    if (!b) return "%\"<null buffer>\"";
    if (!unique_names_) return text::NameText('%', b->name);
    auto [it, inserted] = buffer_names_.try_emplace(b.get());
    if (inserted) it->second = text::NameText('%', Fresh(b->name, "buffer"));
    return it->second;
  }

  // `%name: f32[4,4]` with ` scope` when asked for or when the scope is not "global".
  std::string BufferDecl(const Buffer& b, bool always_scope) {
    std::string text = BufferName(b) + ": ";
    if (!b) return text + "<null>";
    text += ToString(b->dtype) + ShapeToString(b->shape);
    if (always_scope || b->scope != "global") text += fmt::format(" {}", text::KeyText(b->scope));
    return text;
  }

  std::string Operands(const Expr& e) {
    std::vector<std::string> parts;
    for (const Expr& operand : e->operands) parts.push_back(Expression(operand));
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  std::string Unparenthesized(const Expr& e, Precedence own) {
    switch (e->kind) {
      case ExprKind::kIntImm:
        return IntLiteral(e->int_value, e->dtype);
      case ExprKind::kFloatImm:
        return FloatLiteral(e->float_value, e->dtype);
      case ExprKind::kVar:
        return VarName(e);
      case ExprKind::kNot:
        if (e->operands.size() != 1) break;
        return "!" + Expression(e->operands[0], kUnary);
      case ExprKind::kMin:
      case ExprKind::kMax:
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
      case ExprKind::kSelect:
        return ToString(e->kind) + "(" + Operands(e) + ")";
      case ExprKind::kCast:
        return "cast<" + ToString(e->dtype) + ">(" + Operands(e) + ")";
      case ExprKind::kLoad:
        return BufferName(e->buffer) + "[" + Operands(e) + "]";
      case ExprKind::kCall: {
        std::string callee = text::IsBareWord(e->name) && !IsKernelExpressionKeyword(e->name)
                                 ? e->name
                                 : text::Quote(e->name);
        DataType fallback = e->operands.empty() || !e->operands[0].defined()
                                ? DataType::kFloat32
                                : e->operands[0]->dtype;
        if (e->dtype != fallback) callee += "<" + ToString(e->dtype) + ">";
        return callee + "(" + Operands(e) + ")";
      }
      default:
        break;
    }
    if (IsBinary(e->kind) && e->operands.size() == 2 && own != kCompare) {
      // Left-associative: a left operand of the same precedence prints without parentheses, so
      // a chain `a + b - c ...` (thousands of terms deep) is walked down its left spine in a
      // loop and printed left to right; only the right operands recurse.
      std::vector<const Expr*> spine{&e};
      while (true) {
        const Expr& left = (*spine.back())->operands[0];
        if (!left.defined() || !IsBinary(left->kind) || left->operands.size() != 2 ||
            PrecedenceOf(left->kind) != own) {
          break;
        }
        spine.push_back(&left);
      }
      std::string text = Expression((*spine.back())->operands[0], own);
      for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
        text += " " + ToString((**it)->kind) + " " + Expression((**it)->operands[1], own + 1);
      }
      return text;
    }
    if (IsBinary(e->kind) && e->operands.size() == 2) {
      // Comparisons do not chain, so both of their operands bind tighter.
      int left = own + 1;
      return Expression(e->operands[0], left) + " " + ToString(e->kind) + " " +
             Expression(e->operands[1], own + 1);
    }
    return fmt::format("<malformed {} with {} operands>", ToString(e->kind), e->operands.size());
  }

  void Line(int indent, const std::string& text) {
    out_.append(static_cast<size_t>(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  // A statement list: the statements of a Seq of two or more, one statement, or nothing for null.
  void List(const Stmt& s, int indent) {
    const SeqNode* seq = As<SeqNode>(s);
    if (seq && seq->stmts.size() >= 2) {
      for (const Stmt& child : seq->stmts) Item(child, indent);
    } else if (s) {
      Item(s, indent);
    }
  }

  void Item(const Stmt& s, int indent) {
    if (!s) return;  // a null statement inside a Seq has no text (see docs/text_form.md)
    switch (s->kind) {
      case StmtKind::kSeq: {  // a Seq that a plain list would not give back: nested, or < 2
        Line(indent, "seq {");
        for (const Stmt& child : As<SeqNode>(s)->stmts) Item(child, indent + 1);
        Line(indent, "}");
        return;
      }
      case StmtKind::kFor: {
        const auto* loop = As<ForNode>(s);
        size_t mark = scope_.size();
        std::string head = fmt::format("for {}{} in {}", DefineVar(loop->loop_var),
                                       TypeSuffix(loop->loop_var), loop->extent);
        if (loop->for_kind != ForKind::kSerial) head += " " + ToString(loop->for_kind);
        if (!loop->annotations.empty()) {
          head += " annotations " + text::AttrDictText(loop->annotations);
        }
        Line(indent, head + " {");
        List(loop->body, indent + 1);
        Line(indent, "}");
        scope_.resize(mark);
        return;
      }
      case StmtKind::kStore: {
        const auto* store = As<StoreNode>(s);
        std::vector<std::string> indices;
        for (const Expr& index : store->indices) indices.push_back(Expression(index));
        Line(indent, fmt::format("{}[{}] = {}", BufferName(store->buffer), fmt::join(indices, ", "),
                                 Expression(store->value)));
        return;
      }
      case StmtKind::kIfThenElse: {
        const auto* branch = As<IfThenElseNode>(s);
        Line(indent, "if " + Expression(branch->condition) + " {");
        List(branch->then_case, indent + 1);
        if (branch->else_case) {
          Line(indent, "} else {");
          List(branch->else_case, indent + 1);
        }
        Line(indent, "}");
        return;
      }
      case StmtKind::kBlockRealize:
        BlockRealize(*As<BlockRealizeNode>(s), indent);
        return;
    }
  }

  std::string Regions(const char* keyword, const std::vector<BufferRegion>& regions) {
    std::vector<std::string> parts;
    for (const BufferRegion& region : regions) {
      std::vector<std::string> ranges;
      for (const Range& range : region.region) {
        std::string text = Expression(range.min);
        int64_t extent = 0;
        bool unit = AsConstInt(range.extent, &extent) && extent == 1 &&
                    range.extent->dtype == DataType::kInt64;
        if (!unit) text += fmt::format(":{}", Expression(range.extent));
        ranges.push_back(std::move(text));
      }
      parts.push_back(fmt::format("{}[{}]", BufferName(region.buffer), fmt::join(ranges, ", ")));
    }
    return fmt::format("{}({})", keyword, fmt::join(parts, ", "));
  }

  void BlockRealize(const BlockRealizeNode& realize, int indent) {
    const Block& block = realize.block;
    if (!block) {
      Line(indent, "<block realize without a block>");
      return;
    }
    // Iterator values and the predicate are in the scope around the block: print them before
    // the block's own variables get their names.
    std::vector<std::string> values;
    for (const Expr& value : realize.iter_values) values.push_back(Expression(value));
    std::string predicate;
    const Expr& p = realize.predicate;
    if (!(p.defined() && p->kind == ExprKind::kIntImm && p->int_value == 1 &&
          p->dtype == DataType::kBool)) {
      predicate = " where " + Expression(p);
    }
    size_t mark = scope_.size();
    std::vector<std::string> iters;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      const IterVar& iter = block->iter_vars[i];
      iters.push_back(fmt::format("{}: {}{} {} = {}", DefineVar(iter.var),
                                  !iter.var.defined() || iter.var->dtype == DataType::kInt64
                                      ? ""
                                      : ToString(iter.var->dtype) + " ",
                                  ToString(iter.kind), iter.extent,
                                  i < values.size() ? values[i] : "<missing>"));
    }
    std::vector<std::string> header = {fmt::format("block {}({}){}", text::KeyText(block->name),
                                                   fmt::join(iters, ", "), predicate)};
    if (!block->alloc_buffers.empty()) {
      std::vector<std::string> decls;
      for (const Buffer& b : block->alloc_buffers) decls.push_back(BufferDecl(b, true));
      header.push_back(fmt::format("alloc({})", fmt::join(decls, ", ")));
    }
    if (!block->reads.empty()) header.push_back(Regions("reads", block->reads));
    if (!block->writes.empty()) header.push_back(Regions("writes", block->writes));
    if (!block->annotations.empty()) {
      header.push_back("annotations " + text::AttrDictText(block->annotations));
    }
    for (size_t i = 0; i < header.size(); ++i) {
      std::string text = (i > 0 ? "    " : "") + header[i];
      Line(indent, i + 1 == header.size() ? text + " {" : text);
    }
    if (block->init) {
      Line(indent + 1, "init {");
      List(block->init, indent + 2);
      Line(indent + 1, "}");
    }
    List(block->body, indent + 1);
    Line(indent, "}");
    scope_.resize(mark);
  }

  bool unique_names_;
  std::string out_;
  std::unordered_set<std::string> used_;      // names given to variables and buffers
  std::unordered_set<std::string> reserved_;  // free-variable hints (from the dry run)
  std::vector<const ExprNode*> scope_;        // variables bound where printing is, innermost last
  std::unordered_set<std::string> free_hints_;
  std::unordered_set<std::string> listed_free_;
  std::vector<std::string> free_list_;  // declarations of the free(...) clause
  std::unordered_map<const ExprNode*, std::string> var_names_;
  std::unordered_map<const BufferNode*, std::string> buffer_names_;
};

}  // namespace

std::string PrintKernel(const KernelFunction& kernel) {
  return KernelPrinter(/*unique_names=*/true).Kernel(kernel);
}

std::string PrintExpr(const Expr& expr) {
  return KernelPrinter(/*unique_names=*/false).Expression(expr);
}

}  // namespace tandem::ir
