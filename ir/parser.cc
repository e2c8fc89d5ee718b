#include "ir/parser.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <optional>

#include "ir/error.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/lexer.h"
#include "ir/op_registry.h"

namespace tandem::ir {
namespace {

using text::Token;
using text::TokenKind;

// Deeper tuple types are rejected (they would only come from garbage, and recursion is bounded).
constexpr int kMaxTypeDepth = 64;
// Tensor types with more elements are rejected, so that byte counts never overflow int64.
constexpr int64_t kMaxElements = int64_t{1} << 59;

struct Definition {
  ValueId id;
  const Token* token;
};

struct FunctionState {
  GraphFunction function;
  std::map<std::string, Definition> names;
};

class Parser : public text::TokenReader {
 public:
  Parser(const std::string& text, const std::string& source_name)
      : TokenReader(text, source_name) {}

  IRModule Module() {
    IRModule module;
    if (PeekWord("module")) {
      Next();
      if (PeekWord("attributes")) {
        Next();
        module.attrs() = AttrDict();
      }
      ExpectPunct("{");
      Definitions(module);
      if (!PeekPunct("}")) Expected("'graph', 'kernel' or '}'");
      Next();
    } else {
      if (!PeekWord("graph")) Expected("'module' or 'graph'");
      Definitions(module);
    }
    if (Peek().kind != TokenKind::kEnd) Expected("end of input");
    return module;
  }

 private:
  void Definitions(IRModule& module) {
    while (true) {
      if (PeekWord("graph")) {
        Graph(module);
      } else if (PeekWord("kernel")) {
        const Token& name = Peek(1);
        KernelFunction kernel = ParseKernelFunction(*this);
        if (module.HasKernel(kernel.name)) {
          Fail(name, fmt::format("kernel {} is defined twice", text::Describe(name)));
        }
        module.AddKernel(std::move(kernel));
      } else {
        return;
      }
    }
  }

  // ---- types ----
  Type ParseType(int depth = 0) {
    if (depth > kMaxTypeDepth) {
      Fail(Peek(), fmt::format("tuple types nested deeper than {} levels", kMaxTypeDepth));
    }
    if (TryPunct("(")) {
      std::vector<Type> fields;
      if (!PeekPunct(")")) {
        do {
          fields.push_back(ParseType(depth + 1));
        } while (TryPunct(","));
      }
      ExpectPunct(")");
      return Type::Tuple(std::move(fields));
    }
    if (Peek().kind != TokenKind::kWord) Expected("a type such as 'f32[1,3]' or '(f32[2], i64[])'");
    const Token& dtype_token = Next();
    TensorType type;
    try {
      type.dtype = ParseDataType(dtype_token.text);
    } catch (const Error& e) {
      Fail(dtype_token, e.message());
    }
    ExpectPunct("[");
    int64_t elements = 1;
    if (!PeekPunct("]")) {
      do {
        if (Peek().kind != TokenKind::kInt) Expected("an extent (a non-negative integer)");
        const Token& extent_token = Next();
        int64_t extent = Int(extent_token);
        if (extent < 0) Fail(extent_token, fmt::format("extent {} is negative", extent));
        type.shape.push_back(extent);
        if (__builtin_mul_overflow(elements, extent, &elements) || elements > kMaxElements) {
          Fail(extent_token, "the shape has too many elements");
        }
      } while (TryPunct(","));
    }
    const Token& close = ExpectPunct("]");
    // A layout `{NCHW8c}` (or `{"quoted"}`) touches the ']'; a '{' after a space starts
    // something else (an attribute dict, a function body).
    if (PeekPunct("{") && Peek().line == close.line && Peek().column == close.column + 1) {
      Next();
      if (Peek().kind != TokenKind::kWord && Peek().kind != TokenKind::kString) {
        Expected("a layout such as 'NCHW'");
      }
      type.layout = Next().text;
      ExpectPunct("}");
    }
    return type;
  }

  // ---- constants ----
  void StoreElement(Tensor& tensor, int64_t index, const Token& token) const {
    DataType dtype = tensor.dtype();
    std::string dtype_name = ToString(dtype);
    auto store = [&](auto value) {
      std::memcpy(static_cast<uint8_t*>(tensor.raw_data()) + index * SizeOf(dtype), &value,
                  sizeof(value));
    };
    if (IsFloat(dtype)) {
      if (!IsNumber(token))
        Fail(token, fmt::format("expected a number for {} data but found {}", dtype_name,
                                text::Describe(token)));
      if (dtype == DataType::kFloat64) return store(Float<double>(token, "f64"));
      float value = Float<float>(token, dtype_name.c_str());
      if (dtype == DataType::kFloat32) return store(value);
      return store(FloatToHalf(value));
    }
    if (dtype == DataType::kBool) {
      if (token.kind == TokenKind::kWord && (token.text == "true" || token.text == "false")) {
        return store(static_cast<uint8_t>(token.text == "true"));
      }
      if (token.kind == TokenKind::kInt && (token.text == "0" || token.text == "1")) {
        return store(static_cast<uint8_t>(token.text == "1"));
      }
      Fail(token,
           fmt::format("expected true or false for bool data but found {}", text::Describe(token)));
    }
    if (token.kind != TokenKind::kInt) {
      Fail(token, fmt::format("expected an integer for {} data but found {}", dtype_name,
                              text::Describe(token)));
    }
    int64_t value = Int(token);
    auto check = [&](int64_t low, int64_t high) {
      if (value < low || value > high) {
        Fail(token, fmt::format("value {} is out of range for {}", value, dtype_name));
      }
    };
    switch (dtype) {
      case DataType::kInt8:
        check(-128, 127);
        return store(static_cast<int8_t>(value));
      case DataType::kUInt8:
        check(0, 255);
        return store(static_cast<uint8_t>(value));
      case DataType::kInt32:
        check(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
        return store(static_cast<int32_t>(value));
      default:
        return store(value);
    }
  }

  Tensor ConstantData(const TensorType& type, const Token& name) {
    std::string what = fmt::format("constant %{} of type {}", name.text, ToString(type));
    if (PeekWord("elided")) {
      Fail(Peek(), fmt::format("{} has elided data: the text was printed with elided constants "
                               "(PrintOptions::max_constant_bytes) and cannot be parsed back",
                               what));
    }
    if (PeekWord("base64")) {
      Next();
      const Token& data = ExpectKind(TokenKind::kString, "a quoted base64 string");
      std::optional<std::vector<uint8_t>> bytes = text::DecodeBase64(data.text);
      if (!bytes) Fail(data, "malformed base64 data");
      if (static_cast<int64_t>(bytes->size()) != type.num_bytes()) {
        Fail(data, fmt::format("{} needs {} bytes but the base64 data holds {}", what,
                               type.num_bytes(), bytes->size()));
      }
      return Tensor::FromBytes(type, *bytes);
    }
    if (!PeekPunct("[")) Expected("constant data ('[...]' or 'base64\"...\"')");
    const Token& open = Next();
    std::vector<const Token*> items;
    if (!PeekPunct("]")) {
      do {
        if (Peek().kind == TokenKind::kPunct || Peek().kind == TokenKind::kEnd) Expected("a value");
        items.push_back(&Next());
      } while (TryPunct(","));
    }
    ExpectPunct("]");
    if (static_cast<int64_t>(items.size()) != type.num_elements()) {
      Fail(open, fmt::format("{} needs {} values but {} were given", what, type.num_elements(),
                             items.size()));
    }
    Tensor tensor(type);
    for (size_t i = 0; i < items.size(); ++i) {
      StoreElement(tensor, static_cast<int64_t>(i), *items[i]);
    }
    return tensor;
  }

  // ---- functions ----
  ValueId Resolve(const FunctionState& state, const Token& token) const {
    auto it = state.names.find(token.text);
    if (it == state.names.end()) {
      Fail(token, fmt::format("undefined value {}", text::Describe(token)));
    }
    return it->second.id;
  }

  ValueId Define(FunctionState& state, const Token& name, Node node) {
    auto it = state.names.find(name.text);
    if (it != state.names.end()) {
      Fail(name,
           fmt::format("value {} is defined twice (first at line {}, column {})",
                       text::Describe(name), it->second.token->line, it->second.token->column));
    }
    node.name = name.text;
    state.function.nodes.push_back(std::move(node));
    auto id = static_cast<ValueId>(state.function.nodes.size() - 1);
    state.names.emplace(name.text, Definition{id, &name});
    return id;
  }

  void Parameter(FunctionState& state) {
    const Token& name = ExpectKind(TokenKind::kValueName, "a parameter ('%name: type')");
    ExpectPunct(":");
    const Token& type_token = Peek();
    Node node;
    node.kind = NodeKind::kInput;
    node.type = ParseType();
    if (!node.type.is_tensor()) {
      Fail(type_token, fmt::format("parameter {} must have a tensor type but has {}",
                                   text::Describe(name), ToString(node.type)));
    }
    if (PeekPunct("{")) node.attrs = AttrDict();
    node.annotations = OptionalAnnotations();
    state.function.params.push_back(Define(state, name, std::move(node)));
  }

  // The type of a call, tuple or tuple_get_item node from its operands (normalizing call attrs).
  Type Infer(const FunctionState& state, Node& node, const Token& name,
             const std::optional<Type>& declared) const {
    std::vector<Type> operand_types;
    for (ValueId input : node.inputs) operand_types.push_back(state.function.type_of(input));
    if (node.kind == NodeKind::kTuple) return Type::Tuple(std::move(operand_types));
    if (node.kind == NodeKind::kCallKernel || node.kind == NodeKind::kCallExtern) {
      if (!declared) {
        Fail(name, fmt::format("{} needs its result type (': type'): the callee may be defined "
                               "later in the text, or not at all",
                               ToString(node.kind)));
      }
      return *declared;
    }
    if (node.kind == NodeKind::kCall) {
      try {
        return InferCallType(node.op, operand_types, node.attrs);
      } catch (const Error& e) {
        Fail(name, e.message(), node.op, name.text);
      } catch (const std::exception& e) {  // a defect in the op's type inference
        Fail(name, fmt::format("{}: type inference failed: {}", node.op, e.what()), node.op,
             name.text);
      }
    }
    if (operand_types.size() != 1) {
      Fail(name,
           fmt::format("tuple_get_item takes one operand but {} were given", operand_types.size()));
    }
    if (!node.attrs.Has("index") ||
        !std::holds_alternative<int64_t>(node.attrs.values().at("index"))) {
      Fail(name, "tuple_get_item needs an integer attribute 'index' ({index=0})");
    }
    int64_t index = node.attrs.GetInt("index");
    const Type& tuple = operand_types[0];
    if (!tuple.is_tuple()) {
      Fail(name, "tuple_get_item needs a tuple operand but got " + ToString(tuple));
    }
    if (index < 0 || index >= static_cast<int64_t>(tuple.fields().size())) {
      Fail(name,
           fmt::format("tuple_get_item index {} is out of range for {}", index, ToString(tuple)));
    }
    return tuple.fields()[static_cast<size_t>(index)];
  }

  void Statement(FunctionState& state) {
    const Token& name = Next();
    ExpectPunct("=");
    if (Peek().kind != TokenKind::kWord)
      Expected("an op name, 'constant', 'tuple' or 'tuple_get_item'");
    const Token& head = Next();
    Node node;
    if (head.text == "input") Fail(head, "an input must be declared as a parameter of the graph");
    if (head.text == "constant") {
      const Token& type_token = Peek();
      node.kind = NodeKind::kConstant;
      node.type = ParseType();
      if (!node.type.is_tensor()) {
        Fail(type_token, "a constant must have a tensor type but has " + ToString(node.type));
      }
      node.value = ConstantData(node.type.tensor(), name);
      if (PeekPunct("{")) node.attrs = AttrDict();
      node.annotations = OptionalAnnotations();
      Define(state, name, std::move(node));
      return;
    }
    if (head.text == "tuple") {
      node.kind = NodeKind::kTuple;
    } else if (head.text == "tuple_get_item") {
      node.kind = NodeKind::kTupleGetItem;
    } else if (head.text == "call_kernel" || head.text == "call_extern") {
      node.kind = head.text == "call_kernel" ? NodeKind::kCallKernel : NodeKind::kCallExtern;
      node.callee = ExpectKind(TokenKind::kGlobalName, head.text == "call_kernel"
                                                           ? "a kernel name ('@name')"
                                                           : "a graph function name ('@name')")
                        .text;
      if (Peek().kind == TokenKind::kWord || Peek().kind == TokenKind::kString) {
        node.op = Next().text;
      }
    } else {
      node.kind = NodeKind::kCall;
      node.op = head.text;
      try {
        OpRegistry::Global().Get(node.op);
      } catch (const Error& e) {
        Fail(head, e.message(), node.op);
      }
    }
    ExpectPunct("(");
    if (!PeekPunct(")")) {
      do {
        const Token& operand = ExpectKind(TokenKind::kValueName, "an operand ('%name')");
        node.inputs.push_back(Resolve(state, operand));
      } while (TryPunct(","));
    }
    ExpectPunct(")");
    if (PeekPunct("{")) node.attrs = AttrDict();
    std::optional<Type> declared;
    if (TryPunct(":")) declared = ParseType();
    node.annotations = OptionalAnnotations();
    node.type = Infer(state, node, name, declared);
    if (declared && !(*declared == node.type)) {
      std::string source = node.kind == NodeKind::kCall ? node.op : ToString(node.kind);
      Fail(name,
           fmt::format("type mismatch: {} is declared {} but {} infers {}", text::Describe(name),
                       ToString(*declared), source, ToString(node.type)),
           node.op, name.text);
    }
    Define(state, name, std::move(node));
  }

  void Graph(IRModule& module) {
    const Token& graph_token = Next();
    const Token& name = ExpectKind(TokenKind::kGlobalName, "a function name such as '@main'");
    if (module.Has(name.text)) {
      Fail(name, fmt::format("function {} is defined twice", text::Describe(name)));
    }
    FunctionState state;
    GraphFunction& function = state.function;
    function.name = name.text;
    ExpectPunct("(");
    if (!PeekPunct(")")) {
      do {
        Parameter(state);
      } while (TryPunct(","));
    }
    ExpectPunct(")");
    ExpectPunct("->");
    const Token& result_token = Peek();
    Type result = ParseType();
    if (PeekWord("attributes")) {
      Next();
      function.attrs = AttrDict();
    }
    ExpectPunct("{");
    while (!PeekWord("return")) {
      if (Peek().kind != TokenKind::kValueName) Expected("a statement ('%name = ...') or 'return'");
      Statement(state);
    }
    Next();
    const Token& output = ExpectKind(TokenKind::kValueName, "the returned value ('%name')");
    function.output = Resolve(state, output);
    if (!(function.type_of(function.output) == result)) {
      Fail(result_token, fmt::format("{} declares the result type {} but returns {} of type {}",
                                     text::Describe(name), ToString(result), text::Describe(output),
                                     ToString(function.type_of(function.output))));
    }
    ExpectPunct("}");
    try {
      Verify(function);
    } catch (const Error& e) {
      Fail(graph_token, e.message(), e.where().op, e.where().node);
    } catch (const std::exception& e) {
      Fail(graph_token, fmt::format("verification failed: {}", e.what()));
    }
    module.Add(std::move(function));
  }
};

}  // namespace

IRModule ParseModule(const std::string& text, const std::string& source_name) {
  return Parser(text, source_name).Module();
}

GraphFunction ParseFunction(const std::string& text, const std::string& source_name) {
  IRModule module = ParseModule(text, source_name);
  if (module.graph_functions().size() != 1) {
    throw Error(fmt::format("expected exactly one graph function but the text defines {}",
                            module.graph_functions().size()),
                ErrorLocation{.file = source_name});
  }
  return *module.graph_functions().begin()->second;
}

}  // namespace tandem::ir
