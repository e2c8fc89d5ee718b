#include "ir/kernel/kernel_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include "ir/error.h"
#include "ir/kernel/functor.h"

namespace tandem::ir {
namespace {

using text::Token;
using text::TokenKind;

// Deeper nesting of parentheses, calls and statements is rejected, which bounds the parser's
// recursion.
constexpr int kMaxDepth = 200;
// Expression trees deeper than this are rejected. A chain `a + b + c ...` parses in a loop, but
// it is a tree one level deeper per term, and the printer, simplifier, structural hash and code
// generator walk trees recursively: the bound keeps all of them within the stack.
constexpr int kMaxExpressionDepth = 2048;
// Buffers with more elements are rejected, so that byte counts never overflow int64.
constexpr int64_t kMaxElements = int64_t{1} << 59;

constexpr std::array<DataType, 8> kDataTypes = {
    DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,   DataType::kBool};

// The short name of a data type ("f32", "i64", "bool"), as written after ':' or in '<...>'.
std::optional<DataType> ShortDataType(std::string_view word) {
  for (DataType dtype : kDataTypes) {
    if (ToString(dtype) == word) return dtype;
  }
  return std::nullopt;
}

Expr MakeNode(ExprNode node) {
  return Expr(std::make_shared<const ExprNode>(std::move(node)));
}

class KernelParser {
 public:
  explicit KernelParser(text::TokenReader& in) : in_(in) {}

  KernelFunction Kernel() {
    in_.ExpectWord("kernel");
    KernelFunction kernel;
    kernel.name = in_.ExpectKind(TokenKind::kGlobalName, "a kernel name such as '@add'").text;
    in_.ExpectPunct("(");
    if (!in_.PeekPunct(")")) {
      do {
        kernel.params.push_back(BufferDeclaration());
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct(")");
    in_.ExpectPunct("->");
    in_.ExpectPunct("(");
    kernel.num_outputs = 0;
    if (!in_.PeekPunct(")")) {
      do {
        kernel.params.push_back(BufferDeclaration());
        ++kernel.num_outputs;
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct(")");
    if (in_.TryWord("free")) FreeVariables();
    if (in_.TryWord("attributes")) kernel.attrs = in_.AttrDict();
    in_.ExpectPunct("{");
    kernel.body = List(0);
    in_.ExpectPunct("}");
    return kernel;
  }

 private:
  // ---- names ----

  // A definition of variable `name`: a new Var, bound in the current scope.
  Var DefineVar(const Token& name, DataType dtype) {
    Var var = MakeVar(name.text, dtype);
    scope_.emplace_back(name.text, var);
    defined_[name.text] = var;
    return var;
  }

  // `(%name [: dtype], ...)`: the variables that may be used where nothing binds them.
  void FreeVariables() {
    in_.ExpectPunct("(");
    do {
      const Token& name = in_.ExpectKind(TokenKind::kValueName, "a free variable ('%n')");
      DataType dtype = DataType::kInt64;
      if (in_.TryPunct(":")) dtype = DataTypeWord("a data type such as 'i32'");
      if (!free_.emplace(name.text, dtype).second) {
        in_.Fail(name, fmt::format("free variable {} is listed twice", text::Describe(name)));
      }
    } while (in_.TryPunct(","));
    in_.ExpectPunct(")");
  }

  // A use of a variable: the innermost binding of the name around it; else, for a name in the
  // free(...) clause, the variable of that name defined last before this use, or when none was,
  // the free variable of that name.
  Var UseVar(const Token& name) {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it) {
      if (it->first == name.text) return it->second;
    }
    auto free = free_.find(name.text);
    if (free == free_.end()) {
      std::string hint = buffers_.count(name.text) != 0
                             ? " (it is a buffer: index it with [...])"
                             : " (a variable used outside every loop and block that binds it "
                               "must be listed in the kernel's free(...) clause)";
      in_.Fail(name, fmt::format("unbound variable {}{}", text::Describe(name), hint));
    }
    Var var;
    if (auto defined = defined_.find(name.text); defined != defined_.end()) {
      var = defined->second;
    } else {
      auto [it, inserted] = free_objects_.try_emplace(name.text);
      if (inserted) it->second = MakeVar(name.text, free->second);
      var = it->second;
    }
    if (var->dtype != free->second) {
      in_.Fail(name,
               fmt::format("free variable {} is declared {} but defined as {}",
                           text::Describe(name), ToString(free->second), ToString(var->dtype)));
    }
    return var;
  }

  Buffer UseBuffer(const Token& name) const {
    auto it = buffers_.find(name.text);
    if (it == buffers_.end()) {
      in_.Fail(name, fmt::format("undeclared buffer {} (buffers are kernel parameters or declared "
                                 "in a block's alloc(...) before use)",
                                 text::Describe(name)));
    }
    return it->second;
  }

  DataType DataTypeWord(const std::string& what) {
    const Token& token = in_.Peek();
    std::optional<DataType> dtype;
    if (token.kind == TokenKind::kWord) dtype = ShortDataType(token.text);
    if (!dtype) in_.Expected(what);
    in_.Next();
    return *dtype;
  }

  int64_t Extent(const std::string& what) {
    if (in_.Peek().kind != TokenKind::kInt) in_.Expected(what);
    const Token& token = in_.Next();
    int64_t value = in_.Int(token);
    if (value < 0) in_.Fail(token, fmt::format("extent {} is negative", value));
    return value;
  }

  // `%name: f32[4,4] [scope]`. A name declared again must have the same type and scope, and is
  // the same buffer.
  Buffer BufferDeclaration() {
    const Token& name = in_.ExpectKind(TokenKind::kValueName, "a buffer ('%name: f32[...]')");
    in_.ExpectPunct(":");
    DataType dtype = DataTypeWord("a data type such as 'f32'");
    in_.ExpectPunct("[");
    Shape shape;
    int64_t elements = 1;
    if (!in_.PeekPunct("]")) {
      do {
        const Token& token = in_.Peek();
        shape.push_back(Extent("an extent (a non-negative integer)"));
        if (__builtin_mul_overflow(elements, shape.back(), &elements) || elements > kMaxElements) {
          in_.Fail(token, "the buffer has too many elements");
        }
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct("]");
    std::string scope = "global";
    if (in_.Peek().kind == TokenKind::kWord || in_.Peek().kind == TokenKind::kString) {
      scope = in_.Next().text;
    }
    auto [it, inserted] = buffers_.try_emplace(name.text);
    if (inserted) {
      it->second = MakeBuffer(name.text, dtype, std::move(shape), std::move(scope));
    } else {
      const BufferNode& old = *it->second;
      if (old.dtype != dtype || old.shape != shape || old.scope != scope) {
        in_.Fail(name,
                 fmt::format("buffer {} is declared again as {}{} {} but was {}{} {}",
                             text::Describe(name), ToString(dtype), ShapeToString(shape), scope,
                             ToString(old.dtype), ShapeToString(old.shape), old.scope));
      }
    }
    return it->second;
  }

  // ---- expressions ----

  struct DepthGuard {
    DepthGuard(KernelParser& parser) : parser(parser) {  // NOLINT(google-explicit-constructor)
      if (++parser.depth_ > kMaxDepth) {
        parser.in_.Fail(parser.in_.Peek(),
                        fmt::format("expression nested deeper than {} levels", kMaxDepth));
      }
    }
    ~DepthGuard() { --parser.depth_; }
    KernelParser& parser;
  };

  Expr Expression() {
    DepthGuard guard(*this);
    Expr result = Or();
    if (depth_ == 1) tree_depths_.clear();  // a whole expression: its nodes are checked
    return result;
  }

  // The depth of a tree the parser built (a leaf is 1), from the depths recorded by Track.
  int TreeDepth(const Expr& e) {
    if (e->operands.empty()) return 1;
    if (auto it = tree_depths_.find(e.get()); it != tree_depths_.end()) return it->second.second;
    // A node made around tracked operands (a cast that ir::Binary inserts): a level or two.
    int depth = 0;
    for (const Expr& operand : e->operands) depth = std::max(depth, TreeDepth(operand));
    return depth + 1;
  }

  // Records the depth of `e`, a node just built; rejects a tree deeper than the limit before it
  // grows further. The map holds the node, so its address is not reused while it is recorded.
  Expr Track(const Token& at, Expr e) {
    if (e->operands.empty()) return e;
    int depth = 0;
    for (const Expr& operand : e->operands) depth = std::max(depth, TreeDepth(operand));
    if (++depth > kMaxExpressionDepth) {
      in_.Fail(at, fmt::format("expression deeper than {} levels (a chain of operators is one "
                               "level per operator: split it into several statements)",
                               kMaxExpressionDepth));
    }
    tree_depths_.emplace(e.get(), std::make_pair(e, depth));
    return e;
  }

  Expr Binary(ExprKind kind, const Token& at, Expr a, Expr b) {
    try {
      return Track(at, ir::Binary(kind, std::move(a), std::move(b)));
    } catch (const Error& e) {
      in_.Fail(at, e.message());
    }
  }

  Expr Or() {
    Expr left = And();
    while (in_.PeekPunct("||")) {
      const Token& op = in_.Next();
      left = Binary(ExprKind::kOr, op, std::move(left), And());
    }
    return left;
  }

  Expr And() {
    Expr left = Comparison();
    while (in_.PeekPunct("&&")) {
      const Token& op = in_.Next();
      left = Binary(ExprKind::kAnd, op, std::move(left), Comparison());
    }
    return left;
  }

  std::optional<ExprKind> ComparisonOperator() const {
    static const std::pair<const char*, ExprKind> kOperators[] = {
        {"==", ExprKind::kEQ}, {"!=", ExprKind::kNE}, {"<", ExprKind::kLT},
        {"<=", ExprKind::kLE}, {">", ExprKind::kGT},  {">=", ExprKind::kGE}};
    for (const auto& [text, kind] : kOperators) {
      if (in_.PeekPunct(text)) return kind;
    }
    return std::nullopt;
  }

  Expr Comparison() {
    Expr left = Additive();
    std::optional<ExprKind> kind = ComparisonOperator();
    if (!kind) return left;
    const Token& op = in_.Next();
    left = Binary(*kind, op, std::move(left), Additive());
    if (ComparisonOperator()) {
      in_.Fail(in_.Peek(), "comparisons do not chain: parenthesize one of them");
    }
    return left;
  }

  Expr Additive() {
    Expr left = Multiplicative();
    while (true) {
      const Token& op = in_.Peek();
      if (in_.PeekPunct("+") || in_.PeekPunct("-")) {
        in_.Next();
        ExprKind kind = op.text == "+" ? ExprKind::kAdd : ExprKind::kSub;
        left = Binary(kind, op, std::move(left), Multiplicative());
      } else if ((op.kind == TokenKind::kInt || op.kind == TokenKind::kFloat) &&
                 op.text[0] == '-') {
        // `a -1` lexes as `a` and the number `-1`: read it as a subtraction of `1`.
        in_.Next();
        pending_ = Literal(op, op.text.substr(1));
        left = Binary(ExprKind::kSub, op, std::move(left), Multiplicative());
      } else {
        return left;
      }
    }
  }

  Expr Multiplicative() {
    Expr left = Unary();
    while (in_.PeekPunct("*") || in_.PeekPunct("/")) {
      const Token& op = in_.Next();
      ExprKind kind = op.text == "*" ? ExprKind::kMul : ExprKind::kDiv;
      left = Binary(kind, op, std::move(left), Unary());
    }
    return left;
  }

  Expr Unary() {
    if (pending_.defined()) return std::exchange(pending_, Expr());
    const Token& at = in_.Peek();
    if (!in_.PeekPunct("!")) return Track(at, Primary());
    in_.Next();
    DepthGuard guard(*this);
    ExprNode node;
    node.kind = ExprKind::kNot;
    node.dtype = DataType::kBool;
    node.operands = {Unary()};
    return Track(at, MakeNode(std::move(node)));
  }

  // `:dtype` after a literal, else `fallback`.
  DataType LiteralType(DataType fallback) {
    if (in_.PeekPunct(":") && in_.Peek(1).kind == TokenKind::kWord) {
      if (std::optional<DataType> dtype = ShortDataType(in_.Peek(1).text)) {
        in_.Next();
        in_.Next();
        return *dtype;
      }
    }
    return fallback;
  }

  // A number literal with its optional type suffix; `text` is the token's text or a part of it.
  Expr Literal(const Token& token, std::string_view text) {
    Token number = token;
    number.text = std::string(text);
    if (number.kind == TokenKind::kInt) {
      int64_t value = in_.Int(number);
      return IntImm(value, LiteralType(DataType::kInt64));
    }
    double value = in_.Float<double>(number, "f64");
    if (std::isnan(value) && text[0] == '-') value = std::copysign(value, -1.0);
    return FloatImm(value, LiteralType(DataType::kFloat32));
  }

  std::vector<Expr> Arguments() {
    in_.ExpectPunct("(");
    std::vector<Expr> args;
    if (!in_.PeekPunct(")")) {
      do {
        args.push_back(Expression());
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct(")");
    return args;
  }

  std::vector<Expr> Arguments(const Token& callee, size_t count) {
    const Token& open = in_.Peek();
    std::vector<Expr> args = Arguments();
    if (args.size() != count) {
      in_.Fail(open, fmt::format("{} takes {} operands but {} were given", callee.text, count,
                                 args.size()));
    }
    return args;
  }

  std::optional<DataType> AngleType() {
    if (!in_.TryPunct("<")) return std::nullopt;
    DataType dtype = DataTypeWord("a data type such as 'f32'");
    in_.ExpectPunct(">");
    return dtype;
  }

  Expr Call(const Token& callee) {
    std::optional<DataType> declared = AngleType();
    std::vector<Expr> args = Arguments();
    DataType dtype = declared ? *declared : args.empty() ? DataType::kFloat32 : args[0]->dtype;
    return ir::Call(callee.text, std::move(args), dtype);
  }

  Expr Builtin(const Token& word) {
    static const std::pair<const char*, ExprKind> kBinary[] = {{"min", ExprKind::kMin},
                                                               {"max", ExprKind::kMax},
                                                               {"floordiv", ExprKind::kFloorDiv},
                                                               {"floormod", ExprKind::kFloorMod}};
    for (const auto& [name, kind] : kBinary) {
      if (word.text == name) {
        std::vector<Expr> args = Arguments(word, 2);
        return Binary(kind, word, std::move(args[0]), std::move(args[1]));
      }
    }
    if (word.text == "true" || word.text == "false") {
      return IntImm(word.text == "true" ? 1 : 0, DataType::kBool);
    }
    if (word.text == "inf" || word.text == "nan") return Literal(word, word.text);
    if (word.text == "float_bits") {
      in_.ExpectPunct("(");
      const Token& bits = in_.ExpectKind(TokenKind::kInt, "the bits of a double as an integer");
      double value = std::bit_cast<double>(in_.Int(bits));
      in_.ExpectPunct(")");
      return FloatImm(value, LiteralType(DataType::kFloat32));
    }
    if (word.text == "select") {
      std::vector<Expr> args = Arguments(word, 3);
      try {
        return ir::Select(std::move(args[0]), std::move(args[1]), std::move(args[2]));
      } catch (const Error& e) {
        in_.Fail(word, e.message());
      }
    }
    if (word.text == "cast") {
      if (!in_.PeekPunct("<")) in_.Expected("'<' (cast<f32>(x))");
      ExprNode node;
      node.kind = ExprKind::kCast;
      node.dtype = *AngleType();
      node.operands = Arguments(word, 1);
      return MakeNode(std::move(node));  // kept even when the types are equal
    }
    in_.Fail(word, fmt::format("expected an expression but found the data type '{}' (write "
                               "a typed constant as 3:{} and a conversion as cast<{}>(x))",
                               word.text, word.text, word.text));
  }

  Expr Primary() {
    const Token& token = in_.Peek();
    switch (token.kind) {
      case TokenKind::kInt:
      case TokenKind::kFloat:
        in_.Next();
        return Literal(token, token.text);
      case TokenKind::kWord:
        in_.Next();
        return IsKernelExpressionKeyword(token.text) ? Builtin(token) : Call(token);
      case TokenKind::kString:
        in_.Next();
        return Call(token);
      case TokenKind::kValueName: {
        in_.Next();
        if (!in_.PeekPunct("[")) return UseVar(token);
        Buffer buffer = UseBuffer(token);
        std::vector<Expr> indices = Indices(buffer, token, "load");
        return Load(std::move(buffer), std::move(indices));
      }
      default:
        if (in_.TryPunct("(")) {
          Expr inner = Expression();
          in_.ExpectPunct(")");
          return inner;
        }
        in_.Expected("an expression");
    }
  }

  // `[i, j, ...]` with one index per axis of `buffer`.
  std::vector<Expr> Indices(const Buffer& buffer, const Token& name, const char* what) {
    const Token& open = in_.ExpectPunct("[");
    std::vector<Expr> indices;
    if (!in_.PeekPunct("]")) {
      do {
        indices.push_back(Expression());
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct("]");
    if (indices.size() != buffer->shape.size()) {
      in_.Fail(open, fmt::format("{} of buffer {} of rank {} with {} indices", what,
                                 text::Describe(name), buffer->shape.size(), indices.size()));
    }
    return indices;
  }

  // ---- statements ----

  // Statements up to a '}' (not consumed): none is null, one is itself, more form a Seq.
  Stmt List(int depth) {
    std::vector<Stmt> items;
    while (!in_.PeekPunct("}")) items.push_back(Item(depth));
    if (items.empty()) return nullptr;
    if (items.size() == 1) return items[0];
    auto seq = std::make_shared<SeqNode>();
    seq->stmts = std::move(items);
    return seq;
  }

  // `{ statements }`, in a new scope of variables.
  Stmt Braced(int depth) {
    in_.ExpectPunct("{");
    size_t mark = scope_.size();
    Stmt body = List(depth + 1);
    scope_.resize(mark);
    in_.ExpectPunct("}");
    return body;
  }

  Stmt Item(int depth) {
    if (depth > kMaxDepth) {
      in_.Fail(in_.Peek(), fmt::format("statements nested deeper than {} levels", kMaxDepth));
    }
    const Token& head = in_.Peek();
    if (head.kind == TokenKind::kValueName) return Store();
    if (head.kind == TokenKind::kWord) {
      if (head.text == "for") return For(depth);
      if (head.text == "if") return If(depth);
      if (head.text == "block") return BlockRealize(depth);
      if (head.text == "seq") {
        in_.Next();
        in_.ExpectPunct("{");
        auto seq = std::make_shared<SeqNode>();
        while (!in_.PeekPunct("}")) seq->stmts.push_back(Item(depth + 1));
        in_.Next();
        return seq;
      }
    }
    in_.Expected("a statement ('for', 'if', 'block', 'seq' or '%buffer[...] = value') or '}'");
  }

  Stmt Store() {
    const Token& name = in_.Next();
    Buffer buffer = UseBuffer(name);
    std::vector<Expr> indices = Indices(buffer, name, "store");
    in_.ExpectPunct("=");
    Expr value = Expression();
    try {
      return MakeStore(std::move(buffer), std::move(indices), std::move(value));
    } catch (const Error& e) {
      in_.Fail(name, e.message());
    }
  }

  Stmt For(int depth) {
    in_.Next();
    const Token& name = in_.ExpectKind(TokenKind::kValueName, "a loop variable ('%i')");
    DataType dtype = DataType::kInt64;
    if (in_.TryPunct(":")) dtype = DataTypeWord("a data type such as 'i32'");
    in_.ExpectWord("in");
    int64_t extent = Extent("the loop extent (a non-negative integer)");
    ForKind kind = ForKind::kSerial;
    if (in_.Peek().kind == TokenKind::kWord) {
      for (ForKind k : ir::kAllForKinds) {
        if (in_.TryWord(ToString(k))) {
          kind = k;
          break;
        }
      }
    }
    Attrs annotations;
    if (in_.TryWord("annotations")) annotations = in_.AttrDict();
    if (!in_.PeekPunct("{")) {
      in_.Expected(annotations.empty() && kind == ForKind::kSerial
                       ? "a loop kind ('parallel', 'vectorized', 'unrolled', 'blockIdx.x', 'threadIdx.x', ...), "
                         "'annotations' or '{'"
                       : "'{'");
    }
    size_t mark = scope_.size();
    Var var = DefineVar(name, dtype);
    Stmt body = Braced(depth);
    scope_.resize(mark);
    return MakeFor(std::move(var), extent, kind, std::move(body), std::move(annotations));
  }

  Stmt If(int depth) {
    in_.Next();
    Expr condition = Expression();
    Stmt then_case = Braced(depth);
    Stmt else_case;
    if (in_.TryWord("else")) else_case = Braced(depth);
    return MakeIfThenElse(std::move(condition), std::move(then_case), std::move(else_case));
  }

  // `(%A[min:extent, ...], ...)`. The root block's regions (`of_root`) cover whole buffers: a
  // variable in them is an error.
  std::vector<BufferRegion> Regions(bool of_root) {
    in_.ExpectPunct("(");
    std::vector<BufferRegion> regions;
    if (!in_.PeekPunct(")")) {
      do {
        const Token& name = in_.ExpectKind(TokenKind::kValueName, "a buffer region ('%A[...]')");
        BufferRegion region;
        region.buffer = UseBuffer(name);
        const Token& open = in_.ExpectPunct("[");
        if (!in_.PeekPunct("]")) {
          do {
            Range range;
            range.min = Expression();
            range.extent = in_.TryPunct(":") ? Expression() : IntImm(1);
            if (of_root) RejectVariables(name, range);
            region.region.push_back(std::move(range));
          } while (in_.TryPunct(","));
        }
        in_.ExpectPunct("]");
        if (region.region.size() != region.buffer->shape.size()) {
          in_.Fail(open,
                   fmt::format("region of buffer {} of rank {} has {} ranges", text::Describe(name),
                               region.buffer->shape.size(), region.region.size()));
        }
        regions.push_back(std::move(region));
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct(")");
    return regions;
  }

  void RejectVariables(const Token& name, const Range& range) const {
    for (const Expr& e : {range.min, range.extent}) {
      ir::VisitExprTree(e, [&](const Expr& x) {
        if (x->kind != ExprKind::kVar) return;
        in_.Fail(name, fmt::format("the root block's region of buffer {} uses the variable '{}' "
                                   "(root regions cover whole buffers and mention no loop "
                                   "variable or block iterator)",
                                   text::Describe(name), text::NameText('%', x->name)));
      });
    }
  }

  Stmt BlockRealize(int depth) {
    in_.Next();
    if (in_.Peek().kind != TokenKind::kWord && in_.Peek().kind != TokenKind::kString) {
      in_.Expected("a block name");
    }
    auto block = std::make_shared<BlockNode>();
    block->name = in_.Next().text;
    // Iterator values and the predicate read the variables around the block.
    struct Iterator {
      const Token* name;
      DataType dtype;
      IterKind kind;
      int64_t extent;
    };
    std::vector<Iterator> iterators;
    std::vector<Expr> values;
    in_.ExpectPunct("(");
    if (!in_.PeekPunct(")")) {
      do {
        Iterator iterator{&in_.ExpectKind(TokenKind::kValueName, "a block iterator ('%vi: ...')"),
                          DataType::kInt64, IterKind::kSpatial, 0};
        in_.ExpectPunct(":");
        if (in_.Peek().kind == TokenKind::kWord && ShortDataType(in_.Peek().text)) {
          iterator.dtype = DataTypeWord("");
        }
        if (in_.TryWord("reduce")) {
          iterator.kind = IterKind::kReduction;
        } else if (!in_.TryWord("spatial")) {
          in_.Expected("an iterator kind ('spatial' or 'reduce')");
        }
        iterator.extent = Extent("the iterator extent (a non-negative integer)");
        in_.ExpectPunct("=");
        values.push_back(Expression());
        iterators.push_back(iterator);
      } while (in_.TryPunct(","));
    }
    in_.ExpectPunct(")");
    Expr predicate = in_.TryWord("where") ? Expression() : IntImm(1, DataType::kBool);
    size_t mark = scope_.size();
    for (const Iterator& iterator : iterators) {
      block->iter_vars.push_back(
          IterVar{DefineVar(*iterator.name, iterator.dtype), iterator.extent, iterator.kind});
    }
    if (in_.TryWord("alloc")) {
      in_.ExpectPunct("(");
      do {
        block->alloc_buffers.push_back(BufferDeclaration());
      } while (in_.TryPunct(","));
      in_.ExpectPunct(")");
    }
    // The root: the block without iterators that is the kernel's body.
    bool root = depth == 0 && iterators.empty();
    if (in_.TryWord("reads")) block->reads = Regions(root);
    if (in_.TryWord("writes")) block->writes = Regions(root);
    if (in_.TryWord("annotations")) block->annotations = in_.AttrDict();
    if (!in_.PeekPunct("{")) {
      in_.Expected(block->annotations.empty()
                       ? "a block clause ('where', 'alloc', 'reads', 'writes', 'annotations') "
                         "in this order, or '{'"
                       : "'{'");
    }
    in_.Next();
    if (in_.PeekWord("init")) {
      in_.Next();
      block->init = Braced(depth + 1);
    }
    block->body = List(depth + 1);
    in_.ExpectPunct("}");
    scope_.resize(mark);
    return MakeBlockRealize(std::move(values), std::move(predicate), std::move(block));
  }

  text::TokenReader& in_;
  int depth_ = 0;
  Expr pending_;  // a literal already read by Additive, which Unary hands out next
  // The tree depth of each node built in the current expression, with the node itself.
  std::unordered_map<const ExprNode*, std::pair<Expr, int>> tree_depths_;
  std::vector<std::pair<std::string, Var>> scope_;     // bound variables, innermost last
  std::unordered_map<std::string, Var> defined_;       // the Var last defined under each name
  std::unordered_map<std::string, Var> free_objects_;  // free variables, by name
  std::unordered_map<std::string, DataType> free_;     // the free(...) clause
  std::unordered_map<std::string, Buffer> buffers_;
};

}  // namespace

bool IsKernelExpressionKeyword(std::string_view word) {
  static constexpr std::string_view kWords[] = {"true",       "false",    "inf",     "nan",
                                                "float_bits", "select",   "cast",    "min",
                                                "max",        "floordiv", "floormod"};
  for (std::string_view w : kWords) {
    if (word == w) return true;
  }
  return ShortDataType(word).has_value();
}

KernelFunction ParseKernelFunction(text::TokenReader& reader) {
  return KernelParser(reader).Kernel();
}

KernelFunction ParseKernel(const std::string& text, const std::string& source_name) {
  text::TokenReader reader(text, source_name);
  KernelFunction kernel = ParseKernelFunction(reader);
  if (!reader.AtEnd()) reader.Expected("end of input");
  return kernel;
}

}  // namespace tandem::ir
