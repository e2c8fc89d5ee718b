// Errors of the graph IR parser: each kind names what was expected and what was found, at the
// right line and column; and no input, however broken, crashes or hangs the parser.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"

namespace tandem::ir {
namespace {

bool HasOps(std::initializer_list<const char*> ops) {
  for (const char* op : ops) {
    if (OpRegistry::Global().Find(op) == nullptr) return false;
  }
  return true;
}

// Parses `text` expecting an Error at (line, column) whose message contains `message`.
void ExpectParseError(const std::string& text, int line, int column, const std::string& message) {
  SCOPED_TRACE(text);
  try {
    ParseModule(text, "test.tir");
    ADD_FAILURE() << "expected a parse error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "test.tir");
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_EQ(e.where().column, column) << e.what();
    EXPECT_NE(e.message().find(message), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(fmt::format("test.tir:{}:{}: ", line, column), 0), 0u)
        << e.what();
  }
}

TEST(ParseErrors, Lexical) {
  ExpectParseError("graph @f() -> f32[] {\n  $x\n}", 2, 3, "unexpected character '$'");
  ExpectParseError("module attributes {a=\"abc\n}", 1, 22, "unterminated string");
  ExpectParseError("module attributes {a=\"a\\qb\"} {}", 1, 24, "unknown escape");
  ExpectParseError("module attributes {a=\"\\x4\"} {}", 1, 23, "two hex digits");
  ExpectParseError("module attributes {a=12abc} {}", 1, 22, "malformed number '12abc'");
  ExpectParseError("module attributes {a=1.5.2} {}", 1, 22, "malformed number");
  ExpectParseError("graph @f(% x: f32[1]) -> f32[1] {}", 1, 10, "expected a name after '%'");
  ExpectParseError("graph @\"\"() -> f32[1] {}", 1, 7, "must not be empty");
}

TEST(ParseErrors, Syntax) {
  ExpectParseError("", 1, 1, "expected 'module' or 'graph' but found end of input");
  ExpectParseError("graph @f(%x: f32[2]", 1, 20, "expected ')' but found end of input");
  ExpectParseError("graph @f(%x: f32[2]\n    {a=1} {b=2}) -> f32[2] {}", 2, 11,
                   "expected ')' but found '{'");
  ExpectParseError("graph @f() f32[2] {}", 1, 12, "expected '->' but found 'f32'");
  // A layout touches the ']' of its shape; a '{' after a space is an attribute dict.
  ExpectParseError("graph @f(%x: f32[2]{a=1}) -> f32[2] {}", 1, 22, "expected '}' but found '='");
  ExpectParseError("graph @f(%x: f32[2] {NCHW}) -> f32[2] {}", 1, 26, "expected '=' but found '}'");
  ExpectParseError("graph f() -> f32[2] {}", 1, 7,
                   "expected a function name such as '@main' but found 'f'");
  ExpectParseError("graph @f() -> f32[2 {}", 1, 21, "expected ']' but found '{'");
  ExpectParseError("graph @f() -> f32[-2] {}", 1, 19, "extent -2 is negative");
  ExpectParseError("graph @f() -> f33[2] {}", 1, 15, "unknown data type 'f33'");
  ExpectParseError("graph @f() -> f32[2] {\n  return\n}", 3, 1,
                   "expected the returned value ('%name') but found '}'");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant f32[2] [1.0, 2.0]\n  %c\n}", 4, 1,
                   "expected '=' but found '}'");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant f32[2] [1.0 2.0]\n}", 2, 29,
                   "expected ']' but found '2.0'");
  ExpectParseError("graph @f() -> f32[2] {\n  7\n}", 2, 3,
                   "expected a statement ('%name = ...') or 'return' but found '7'");
  ExpectParseError("module {\n  graph @f() -> f32[] { %c = constant f32[] [1.0] return %c }\n x", 3,
                   2, "expected 'graph', 'kernel' or '}' but found 'x'");
  ExpectParseError("graph @f() -> f32[] { %c = constant f32[] [1.0] return %c } }", 1, 61,
                   "expected end of input but found '}'");
  ExpectParseError("module attributes {a=1, a=2} {}", 1, 25, "attribute 'a' is given twice");
  ExpectParseError("module attributes {a=[1, \"x\"]} {}", 1, 26, "expected a number");
  ExpectParseError("module attributes {a=99999999999999999999} {}", 1, 22, "out of range");
  ExpectParseError("module attributes {a=1e999} {}", 1, 22, "out of range");
  std::string deep = "graph @f() -> " + std::string(100, '(');
  ExpectParseError(deep, 1, 80, "tuple types nested deeper than 64 levels");
  ExpectParseError("graph @f(%x: " + std::string(100000, '('), 1, 79,
                   "tuple types nested deeper than 64 levels");
  ExpectParseError("graph @f(%x: f32[4294967296,4294967296]) -> f32[] {}", 1, 29,
                   "too many elements");
}

TEST(ParseErrors, Semantics) {
  ExpectParseError("graph @f(%x: f32[2], %x: f32[2]) -> f32[2] { return %x }", 1, 22,
                   "value '%x' is defined twice (first at line 1, column 10)");
  ExpectParseError("graph @f() -> f32[2] {\n  return %nope\n}", 2, 10, "undefined value '%nope'");
  ExpectParseError("graph @f(%x: f32[2]) -> f32[3] {\n  return %x\n}", 1, 25,
                   "declares the result type f32[3] but returns '%x' of type f32[2]");
  ExpectParseError(
      "graph @f() -> f32[] { %c = constant f32[] [1.0] return %c }\n"
      "graph @f() -> f32[] { %c = constant f32[] [1.0] return %c }",
      2, 7, "function '@f' is defined twice");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant f32[2] [1.0]\n  return %c\n}", 2, 24,
                   "needs 2 values but 1 were given");
  ExpectParseError("graph @f() -> i8[1] {\n  %c = constant i8[1] [128]\n  return %c\n}", 2, 24,
                   "value 128 is out of range for i8");
  ExpectParseError("graph @f() -> i32[1] {\n  %c = constant i32[1] [1.5]\n  return %c\n}", 2, 25,
                   "expected an integer for i32 data but found '1.5'");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant f32[2] base64\"AAAA\"\n}", 2, 30,
                   "needs 8 bytes but the base64 data holds 3");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant f32[2] base64\"A*==\"\n}", 2, 30,
                   "malformed base64 data");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant f32[2] elided\n}", 2, 24,
                   "printed with elided constants");
  ExpectParseError("graph @f() -> f32[2] {\n  %c = constant (f32[2]) [1.0]\n}", 2, 17,
                   "a constant must have a tensor type");
  ExpectParseError("graph @f(%t: (f32[2])) -> f32[2] {}", 1, 14, "must have a tensor type");
  ExpectParseError("graph @f(%x: f32[2]) -> f32[2] {\n  %y = input f32[2]\n}", 2, 8,
                   "an input must be declared as a parameter");
  ExpectParseError(
      "graph @f(%x: f32[2]) -> f32[2] {\n  %t = tuple(%x)\n"
      "  %g = tuple_get_item(%t) {index=1}\n}",
      3, 3, "tuple_get_item index 1 is out of range for (f32[2])");
  ExpectParseError(
      "graph @f(%x: f32[2]) -> f32[2] {\n  %t = tuple(%x)\n  %g = tuple_get_item(%t)\n}", 3, 3,
      "needs an integer attribute 'index'");
  ExpectParseError("graph @f(%x: f32[2]) -> f32[2] {\n  %t = tuple(%x) : (f32[3])\n}", 2, 3,
                   "type mismatch: '%t' is declared (f32[3]) but tuple infers (f32[2])");
}

TEST(ParseErrors, UnknownOpAndTypeMismatchAtTheNode) {
  if (!HasOps({"relu", "add"})) GTEST_SKIP() << "relu and add are not registered yet";
  std::string text =
      "module {\n"
      "graph @f(%x: f32[2,3], %y: f32[4]) -> f32[2,3] {\n"
      "  %a = relu(%x) : f32[2,3]\n"
      "    %b = relux(%a) : f32[2,3]\n"
      "  return %b\n"
      "}\n"
      "}\n";
  try {
    ParseModule(text);
    FAIL() << "unknown op parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 4);
    EXPECT_EQ(e.where().column, 10);
    EXPECT_EQ(e.where().op, "relux");
    EXPECT_NE(e.message().find("unknown op 'relux'; did you mean"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("relu?"), std::string::npos) << e.what();
  }
  ExpectParseError(
      "graph @f(%x: f32[2,3]) -> f32[2,3] {\n  %a = relu(%x) : f32[3,2]\n  return %a\n}", 2, 3,
      "type mismatch: '%a' is declared f32[3,2] but relu infers f32[2,3]");
  ExpectParseError(
      "graph @f(%x: f32[2,3]) -> f32[2,3] {\n  %a = relu(%x) : f32[2,3]{NHWC}\n  return %a\n}", 2,
      3, "but relu infers f32[2,3]");
  // An operand shape error from type inference is reported at the node, naming the op.
  try {
    ParseModule("graph @f(%x: f32[2,3], %y: f32[4]) -> f32[2,3] {\n  %s = add(%x, %y)\n}");
    FAIL() << "a broadcast error parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().column, 3);
    EXPECT_EQ(e.where().op, "add");
    EXPECT_EQ(e.where().node, "s");
    EXPECT_NE(e.message().find("f32[2,3], f32[4]"), std::string::npos) << e.what();
  }
  // An attribute the op does not have.
  ExpectParseError("graph @f(%x: f32[2]) -> f32[2] {\n  %a = relu(%x) {alpha=1.0}\n}", 2, 3,
                   "relu has no attribute 'alpha'");
}

// A module whose text exercises most of the grammar (used by the robustness tests).
std::string SampleText() {
  std::string ops = HasOps({"relu", "add"}) ? "  %r = relu(%x) : f32[2,3] @{backend=\"llvm\"}\n"
                                              "  %s = add(%r, %w) : f32[2,3]\n"
                                            : "  %r = tuple(%x) : (f32[2,3])\n"
                                              "  %s = tuple_get_item(%r) {index=0} : f32[2,3]\n";
  return "module attributes {name=\"m\", scale=[0.5,-inf], empty=[.]} {\n"
         "graph @\"main fn\"(%x: f32[2,3], %\"y/0\": f32[1,8,2,2,8]{NCHW8c} {k=1} @{d=[1,2]})"
         " -> (f32[2,3], i64[2]) attributes {f=nan} {\n"
         "  %w = constant f32[2,3] [1.0, -2.5, 0.0, inf, 1e-07, -0.0]\n"
         "  %i = constant i64[2] base64\"AQAAAAAAAAD//////////w==\"\n"
         "  %b = constant bool[2] [true, false] {a=\"x\\n\"}\n" +
         ops +
         "  %t = tuple(%s, %i) : (f32[2,3], i64[2])\n"
         "  return %t\n"
         "}\n"
         "}\n";
}

TEST(ParseRobustness, SampleTextParses) {
  IRModule module = ParseModule(SampleText());
  EXPECT_EQ(PrintModule(ParseModule(PrintModule(module))), PrintModule(module));
  const GraphFunction& f = module.Get("main fn");
  EXPECT_EQ(f.node(f.Find("i")).value.data<int64_t>()[1], -1);
}

// Every prefix of a valid text either parses or throws Error (nothing else, no crash).
TEST(ParseRobustness, EveryPrefixParsesOrThrowsError) {
  std::string text = SampleText();
  int parsed = 0;
  for (size_t length = 0; length <= text.size(); ++length) {
    try {
      ParseModule(text.substr(0, length));
      ++parsed;
    } catch (const Error&) {
    }
  }
  EXPECT_EQ(parsed, 2);  // the whole text, and the text without its final newline
}

// Random bytes, random token soups and random single-byte mutations of a valid text either parse
// or throw Error.
TEST(ParseRobustness, GarbageNeverCrashes) {
  std::mt19937 rng(12345);
  std::string text = SampleText();
  auto parse = [](const std::string& input) {
    try {
      ParseModule(input);
    } catch (const Error&) {
    }
  };
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    parse(bytes);
  }
  const std::vector<std::string> pieces = {
      "module", "graph",  "@f",      "%x",         "%y",     "(",
      ")",      "[",      "]",       "{",          "}",      "@{",
      ",",      ":",      "=",       "->",         ".",      "f32",
      "i64",    "bool",   "[2]",     "1",          "-1",     "2.5",
      "-inf",   "nan",    "\"s\"",   "constant",   "tuple",  "tuple_get_item",
      "relu",   "add",    "return",  "attributes", "base64", "elided",
      "true",   "{NCHW}", "index=0", "\n"};
  for (int round = 0; round < 3000; ++round) {
    std::string soup;
    size_t count = rng() % 60;
    for (size_t i = 0; i < count; ++i) soup += pieces[rng() % pieces.size()] + " ";
    parse(soup);
  }
  for (int round = 0; round < 3000; ++round) {
    std::string mutated = text;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0:
          mutated[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          mutated.erase(at, 1 + rng() % 4);
          break;
        default:
          mutated.insert(at, pieces[rng() % pieces.size()]);
      }
    }
    parse(mutated);
  }
  SUCCEED();
}

// Calls of every registered op with random operand types and attribute values of random kinds:
// the parser (through each op's type inference) must answer with a module or an Error.
TEST(ParseRobustness, RandomOpCallsNeverCrash) {
  std::mt19937 rng(777);
  auto pick = [&](int low, int high) { return low + static_cast<int>(rng() % (high - low + 1)); };
  auto random_type = [&] {
    const char* dtypes[] = {"f32", "f32", "f32", "i64", "f16", "bool"};
    std::vector<int64_t> shape(static_cast<size_t>(pick(0, 5)));
    for (int64_t& extent : shape) extent = pick(0, 9) == 0 ? 0 : pick(1, 6);
    std::string layout = pick(0, 9) == 0 ? "{NCHW}" : "";
    return fmt::format("{}[{}]{}", dtypes[pick(0, 5)], fmt::join(shape, ","), layout);
  };
  auto random_ints = [&] {
    std::vector<int64_t> values(static_cast<size_t>(pick(0, 7)));
    for (int64_t& v : values) v = pick(-3, 12);
    return values;
  };
  auto random_value = [&](AttrKind kind) -> AttrValue {
    const char* strings[] = {"NCHW", "NHWC", "NCHW8c", "OIHW",    "HWIO",     "tanh", "none",
                             "f16",  "i64",  "edge",   "reflect", "constant", "",     "x"};
    const double floats[] = {-1.5,
                             0.0,
                             1e-5,
                             3.0,
                             std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN()};
    if (pick(0, 9) == 0) kind = static_cast<AttrKind>(pick(0, 4));  // sometimes the wrong kind
    switch (kind) {
      case AttrKind::kInt:
        return int64_t{pick(-3, 12)};
      case AttrKind::kFloat:
        return floats[pick(0, 5)];
      case AttrKind::kString:
        return std::string(strings[pick(0, 13)]);
      case AttrKind::kInts:
        return random_ints();
      case AttrKind::kFloats:
        return std::vector<double>{floats[pick(0, 5)], floats[pick(0, 5)]};
    }
    return int64_t{0};
  };
  int parsed = 0, calls = 0;
  for (const std::string& op : OpRegistry::Global().Names()) {
    const OpDef& def = OpRegistry::Global().Get(op);
    for (int round = 0; round < 300; ++round) {
      int high = def.max_inputs < 0 ? def.min_inputs + 3 : def.max_inputs;
      int num_operands = std::max(0, pick(def.min_inputs, high) + (pick(0, 19) == 0 ? 1 : 0));
      std::vector<std::string> params, operands;
      for (int i = 0; i < num_operands; ++i) {
        params.push_back(fmt::format("%a{}: {}", i, random_type()));
        operands.push_back(fmt::format("%a{}", i));
      }
      std::vector<std::string> attrs;
      for (const AttrSpec& spec : def.attrs) {
        if (pick(0, 3) == 0) continue;  // default, or missing when required
        attrs.push_back(spec.name + "=" + ToString(random_value(spec.kind)));
      }
      std::string text = fmt::format(
          "graph @f({}) -> f32[] {{\n  %r = {}({}) {{{}}}\n  return %r\n}}\n",
          fmt::join(params, ", "), op, fmt::join(operands, ", "), fmt::join(attrs, ", "));
      ++calls;
      try {
        ParseModule(text);
        ++parsed;
      } catch (const Error& e) {
        // A wrong declared result type is the expected error when the call itself is valid.
        if (e.message().find("declares the result type") != std::string::npos) ++parsed;
        // Type inference must report bad input as Error itself, not as another exception.
        EXPECT_EQ(e.message().find("type inference failed"), std::string::npos) << e.what() << "\n"
                                                                                << text;
      }
    }
  }
  // Some of the random calls are valid, so type inference really ran on them.
  EXPECT_GT(parsed, calls / 20) << parsed << " of " << calls;
  std::cout << parsed << " of " << calls << " random calls type-checked\n";
}

}  // namespace
}  // namespace tandem::ir
