// The ONNX importer: reads an ONNX model (opset 13 and later; opsets 11 and 12 where the ops
// used mean the same; older opsets when every op used has meant the same since) into an
// IRModule holding one graph function.
//
// Graph inputs that are not initializers become the function's parameters, named after the ONNX
// inputs and in their order; initializers become constants; the graph outputs are the result (a
// tuple when there are several). Tensors computable at import time (initializers, Constant
// nodes, Shape of any tensor — shapes are static — and every node whose inputs are all such
// constants) are evaluated by the importer instead of becoming nodes, so shape computations
// exported by PyTorch (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) disappear.
//
// Every failure throws tandem::ir::Error naming the file and, for a node, the ONNX node (its name,
// or "#index op_type" when unnamed) and its op type. The module carries the attributes
// "source" = "onnx", "opset" (the ai.onnx opset) and "producer" (when the file names one).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/type.h"

namespace tandem::frontend {

// Limits on what the importer reads, each named by the Error that a model beyond it gets:
// the serialized size (protobuf's own limit for one message; larger models keep their weights
// in external data, which Tandem does not read) and the nesting of messages (a graph inside an
// attribute inside a node ...), so that a hostile file cannot exhaust the stack while parsing.
inline constexpr int64_t kMaxOnnxModelBytes = (int64_t{1} << 31) - 1;
inline constexpr int kMaxOnnxNesting = 64;

struct OnnxImportOptions {
  // Name of the graph function the model becomes.
  std::string function_name = "main";
  // Concrete shapes for inputs with symbolic or unknown dimensions, by ONNX input name. A shape
  // given here replaces the declared one; its rank and known extents must agree with it.
  std::map<std::string, ir::Shape> input_shapes;
  // Sizes of symbolic dimensions by their ONNX name (dim_param), for the inputs not given in
  // input_shapes: {"seq": 128} binds every dimension named "seq".
  std::map<std::string, int64_t> symbols;
};

// Adds the binding "NAME=SIZE" (a non-negative size) to `symbols`; Error naming `option` (the
// command-line option it came from) and the text otherwise.
void ParseSymbolBinding(const std::string& text, const std::string& option,
                        std::map<std::string, int64_t>& symbols);

// The ONNX op types the importer converts, sorted: the op type for the default domain
// ("Conv"), "<domain>.<op type>" for another ("com.microsoft.FastGelu"). A model with a node of
// any other type fails at import with one Error listing every such type, its node count and
// first node.
std::vector<std::string> SupportedOnnxOps();

// Imports the model file at `path`.
ir::IRModule ImportOnnxFile(const std::string& path, const OnnxImportOptions& options = {});
// Imports a serialized ModelProto; `source_name` names it in errors (a path or a label).
ir::IRModule ImportOnnxModel(const std::string& bytes, const std::string& source_name,
                             const OnnxImportOptions& options = {});

}  // namespace tandem::frontend
