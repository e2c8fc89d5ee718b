#include "frontend/onnx_importer.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <new>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "frontend/onnx_convert.h"
#include "frontend/onnx_dim_expression.h"
#include "frontend/onnx_file.h"
#include "frontend/onnx_model_checks.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"

namespace tandem::frontend {

using ir::Error;
using onnx_import::Value;

namespace {

class GraphImporter {
 public:
  GraphImporter(const onnx::GraphProto& graph, const OnnxImportOptions& options,
                std::map<std::string, int64_t> opsets)
      : graph_(graph),
        options_(options),
        opsets_(std::move(opsets)),
        builder_(options.function_name),
        values_(builder_) {}

  ir::GraphFunction Import() {
    onnx_import::CheckOpsSupported(graph_);
    ReadInitializers();
    ReadInputs();
    for (int i = 0; i < graph_.node_size(); ++i) ImportNode(graph_.node(i), i);
    return Finish();
  }

 private:
  void Define(const std::string& name, Value value, const std::string& what) {
    if (!tensors_.emplace(name, value).second) {
      throw Error(fmt::format("tensor '{}' is defined twice (again by {})", name, what));
    }
  }

  void ReadInitializers() {
    if (graph_.sparse_initializer_size() > 0) {
      throw Error(fmt::format("sparse initializer '{}' is not supported",
                              graph_.sparse_initializer(0).values().name()));
    }
    for (const onnx::TensorProto& proto : graph_.initializer()) {
      if (proto.name().empty()) throw Error("an initializer has no name");
      Define(proto.name(),
             values_.AddConstant(TensorFromProto(proto), onnx_import::GraphName(proto.name())),
             "an initializer");
    }
  }

  ir::TensorType InputType(const onnx::ValueInfoProto& input) {
    const std::string& name = input.name();
    if (!input.type().has_tensor_type()) {
      throw Error(
          fmt::format("graph input '{}' is not a tensor (sequences, maps and optionals are "
                      "not supported)",
                      name));
    }
    const onnx::TypeProto::Tensor& tensor = input.type().tensor_type();
    ir::TensorType type;
    try {
      type.dtype = DataTypeFromOnnx(tensor.elem_type());
    } catch (const Error& e) {
      throw Error(fmt::format("graph input '{}': {}", name, e.message()));
    }
    auto given = options_.input_shapes.find(name);
    if (!tensor.has_shape()) {
      if (given == options_.input_shapes.end()) {
        throw Error(
            fmt::format("graph input '{}' has no declared shape; pass its shape in "
                        "OnnxImportOptions::input_shapes (--input-shape {}=...)",
                        name, name));
      }
      type.shape = given->second;
    } else {
      for (int d = 0; d < tensor.shape().dim_size(); ++d) {
        const onnx::TensorShapeProto::Dimension& dim = tensor.shape().dim(d);
        int64_t extent = dim.has_dim_value() ? dim.dim_value() : -1;
        if (dim.has_dim_value() && extent < 0) {
          throw Error(fmt::format("graph input '{}' has a negative extent {} in dimension {}", name,
                                  extent, d));
        }
        if (given == options_.input_shapes.end() && dim.has_dim_param()) {
          // A symbol, or arithmetic on symbols ("past_sequence_length + 1").
          if (std::optional<int64_t> bound = DimParamExtent(dim.dim_param(), options_.symbols)) {
            extent = *bound;
          }
        }
        if (given != options_.input_shapes.end()) {
          if (given->second.size() != static_cast<size_t>(tensor.shape().dim_size())) {
            throw Error(
                fmt::format("the shape {} given for input '{}' has rank {} but the model "
                            "declares rank {}",
                            ir::ShapeToString(given->second), name, given->second.size(),
                            tensor.shape().dim_size()));
          }
          int64_t chosen = given->second[static_cast<size_t>(d)];
          if (extent >= 0 && chosen != extent) {
            throw Error(
                fmt::format("the shape {} given for input '{}' has extent {} in dimension "
                            "{} but the model fixes it to {}",
                            ir::ShapeToString(given->second), name, chosen, d, extent));
          }
          extent = chosen;
        } else if (extent < 0) {
          bool named = dim.has_dim_param() && !dim.dim_param().empty();
          std::string symbol =
              named ? fmt::format("symbolic ('{}')", dim.dim_param()) : std::string("unknown");
          std::string by_symbol;
          if (named) {
            std::vector<std::string> unbound;
            for (const std::string& needed : DimParamSymbols(dim.dim_param())) {
              if (!options_.symbols.count(needed)) unbound.push_back(needed + "=...");
            }
            by_symbol =
                fmt::format(", or the size of {} in OnnxImportOptions::symbols (--symbol {})",
                            unbound.size() == 1 ? "the symbol" : "its symbols",
                            fmt::join(unbound, " --symbol "));
          }
          throw Error(
              fmt::format("graph input '{}' has a {} extent in dimension {}; Tandem needs "
                          "static shapes: pass the input's shape in "
                          "OnnxImportOptions::input_shapes (--input-shape {}=...){}",
                          name, symbol, d, name, by_symbol));
        }
        type.shape.push_back(extent);
      }
    }
    for (int64_t extent : type.shape) {
      if (extent < 0) {
        throw Error(fmt::format("the shape given for input '{}' has a negative extent", name));
      }
    }
    onnx_import::CheckedNumElements(type.shape);
    return type;
  }

  void ReadInputs() {
    std::vector<const onnx::ValueInfoProto*> parameters;
    std::set<std::string> names;
    for (const onnx::ValueInfoProto& input : graph_.input()) {
      if (tensors_.count(input.name())) continue;  // an initializer: a constant
      if (input.name().empty()) throw Error("a graph input has no name");
      parameters.push_back(&input);
      names.insert(input.name());
    }
    for (const auto& [name, shape] : options_.input_shapes) {
      if (names.count(name) == 0) {
        throw Error(
            fmt::format("an input shape is given for '{}', which is not an input of the "
                        "model (its inputs: {})",
                        name, fmt::join(names, ", ")));
      }
    }
    std::set<std::string> symbols;  // the symbolic dimensions of the inputs
    for (const onnx::ValueInfoProto* input : parameters) {
      if (!input->type().has_tensor_type() || !input->type().tensor_type().has_shape()) continue;
      for (const auto& dim : input->type().tensor_type().shape().dim()) {
        if (!dim.has_dim_param() || dim.dim_param().empty()) continue;
        symbols.insert(dim.dim_param());
        for (const std::string& used : DimParamSymbols(dim.dim_param())) symbols.insert(used);
      }
    }
    for (const auto& [symbol, size] : options_.symbols) {
      if (symbols.count(symbol) == 0) {
        throw Error(fmt::format(
            "a size is given for the symbol '{}', which names no dimension of the model's "
            "inputs (their symbolic dimensions: {})",
            symbol,
            symbols.empty() ? std::string("none") : fmt::format("{}", fmt::join(symbols, ", "))));
      }
    }
    for (const onnx::ValueInfoProto* input : parameters) {
      ir::ValueId id = builder_.Input(input->name(), InputType(*input));
      Define(input->name(), values_.AddGraphValue(id), "a graph input");
    }
  }

  void ImportNode(const onnx::NodeProto& node, int index) {
    std::string label = onnx_import::NodeLabel(node, index);
    ir::ErrorLocation where{.op = node.op_type(), .node = label};
    const auto& converters = onnx_import::Converters();
    auto converter = converters.find(onnx_import::ConverterKey(node.domain(), node.op_type()));
    if (converter == converters.end()) {  // CheckOpsSupported found none
      throw Error(fmt::format("unsupported ONNX op '{}' at node '{}'", node.op_type(), label),
                  where);
    }
    try {
      std::vector<std::optional<Value>> inputs;
      for (const std::string& name : node.input()) {
        if (name.empty()) {
          inputs.push_back(std::nullopt);
          continue;
        }
        auto it = tensors_.find(name);
        if (it == tensors_.end()) {
          throw Error(
              fmt::format("input '{}' is not defined by a graph input, an initializer or an "
                          "earlier node",
                          name));
        }
        inputs.push_back(it->second);
      }
      ir::ValueId first_node = static_cast<ir::ValueId>(builder_.num_nodes());
      onnx_import::NodeContext context(values_, node, std::move(inputs), opsets_.at(""));
      std::vector<Value> outputs = converter->second(context);
      context.CheckAttributesUsed();
      for (int i = 0; i < node.output_size(); ++i) {
        const std::string& name = node.output(i);
        if (name.empty()) continue;
        if (static_cast<size_t>(i) >= outputs.size()) {
          throw Error(
              fmt::format("output {} ('{}') of {} is not supported", i, name, node.op_type()));
        }
        Value value = outputs[static_cast<size_t>(i)];
        Define(name, value, "node '" + label + "'");
        ir::ValueId id = values_.GraphValueOf(value);
        if (id >= first_node) renames_.push_back({id, first_node, onnx_import::GraphName(name)});
      }
    } catch (const Error& e) {
      ir::ErrorLocation inner = e.where();
      inner.node = label;
      if (inner.op.empty()) inner.op = node.op_type();
      throw Error(fmt::format("ONNX node '{}' ({}): {}", label, node.op_type(), e.message()),
                  inner);
    } catch (const std::bad_alloc&) {
      throw Error(fmt::format("ONNX node '{}' ({}): out of memory", label, node.op_type()), where);
    } catch (const std::exception& e) {
      throw Error(fmt::format("ONNX node '{}' ({}): {}", label, node.op_type(), e.what()), where);
    }
  }

  // Checks an output's computed type against its declaration (dtype and rank always; extents
  // only when no input shape was overridden, since overrides legitimately change them).
  void CheckOutput(const onnx::ValueInfoProto& output, const ir::TensorType& type) {
    if (!output.type().has_tensor_type()) return;
    const onnx::TypeProto::Tensor& declared = output.type().tensor_type();
    if (declared.elem_type() != 0 && declared.elem_type() != DataTypeToOnnx(type.dtype)) {
      throw Error(fmt::format("graph output '{}' is declared with ONNX type {} but computes {}",
                              output.name(), declared.elem_type(), ir::ToString(type)));
    }
    if (!declared.has_shape()) return;
    bool mismatch = declared.shape().dim_size() != type.rank();
    for (int d = 0; !mismatch && d < declared.shape().dim_size(); ++d) {
      const auto& dim = declared.shape().dim(d);
      mismatch = options_.input_shapes.empty() && dim.has_dim_value() &&
                 dim.dim_value() != type.shape[static_cast<size_t>(d)];
    }
    if (mismatch) {
      std::vector<std::string> dims;
      for (const auto& dim : declared.shape().dim()) {
        dims.push_back(dim.has_dim_value() ? std::to_string(dim.dim_value()) : "?");
      }
      throw Error(fmt::format("graph output '{}' is declared with shape [{}] but computes {}",
                              output.name(), fmt::join(dims, ","), ir::ToString(type)));
    }
  }

  ir::GraphFunction Finish() {
    if (graph_.output_size() == 0) throw Error("the graph has no outputs");
    std::vector<ir::ValueId> results;
    for (const onnx::ValueInfoProto& output : graph_.output()) {
      auto it = tensors_.find(output.name());
      if (it == tensors_.end()) {
        throw Error(fmt::format(
            "graph output '{}' is not computed by any node, initializer or input", output.name()));
      }
      CheckOutput(output, values_.TypeOf(it->second));
      results.push_back(values_.Materialize(it->second));
    }
    ir::GraphFunction function = builder_.Finish(results);
    NameOutputs(function);
    return function;
  }

  // Gives the graph value of each node output the ONNX tensor's name. A converter names every
  // op it emits after the node's first output, so the name may sit on an intermediate op of the
  // same node; the two swap names then.
  void NameOutputs(ir::GraphFunction& function) {
    std::unordered_map<std::string, ir::ValueId> holders;
    for (size_t i = 0; i < function.nodes.size(); ++i) {
      holders[function.nodes[i].name] = static_cast<ir::ValueId>(i);
    }
    for (const Rename& rename : renames_) {
      ir::Node& node = function.nodes[static_cast<size_t>(rename.id)];
      if (rename.name.empty() || node.name == rename.name) continue;
      auto holder = holders.find(rename.name);
      if (holder == holders.end()) {
        holders.erase(node.name);
      } else if (holder->second >= rename.first_node && holder->second < rename.id) {
        ir::Node& other = function.nodes[static_cast<size_t>(holder->second)];
        other.name = node.name;
        holders[other.name] = holder->second;
      } else {
        continue;
      }
      node.name = rename.name;
      holders[node.name] = rename.id;
    }
  }

  const onnx::GraphProto& graph_;
  const OnnxImportOptions& options_;
  std::map<std::string, int64_t> opsets_;
  ir::GraphBuilder builder_;
  onnx_import::ValueTable values_;
  std::unordered_map<std::string, Value> tensors_;
  struct Rename {
    ir::ValueId id;          // the graph value of a node output
    ir::ValueId first_node;  // the first graph node the ONNX node emitted
    std::string name;        // the ONNX tensor name, as a graph name
  };
  std::vector<Rename> renames_;
};

ir::IRModule ImportModelProto(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  std::map<std::string, int64_t> opsets;
  for (const onnx::OperatorSetIdProto& entry : model.opset_import()) {
    std::string domain = entry.domain() == "ai.onnx" ? "" : entry.domain();
    opsets[domain] = entry.version();
  }
  if (opsets.count("") == 0) throw Error("the model imports no ai.onnx opset");
  int64_t opset = opsets.at("");
  if (!model.has_graph()) throw Error("the model has no graph");
  onnx_import::CheckOldOpset(model.graph(), opset);
  ir::IRModule module;
  module.Add(GraphImporter(model.graph(), options, opsets).Import());
  ir::Verify(module);
  module.attrs().Set("source", std::string("onnx"));
  module.attrs().Set("opset", opset);
  if (!model.producer_name().empty()) {
    std::string producer = model.producer_name();
    if (!model.producer_version().empty()) producer += " " + model.producer_version();
    module.attrs().Set("producer", producer);
  }
  return module;
}

// Error when a model of `bytes` bytes is over kMaxOnnxModelBytes.
void CheckModelSize(std::uintmax_t bytes, const ir::ErrorLocation& where) {
  if (bytes <= static_cast<std::uintmax_t>(kMaxOnnxModelBytes)) return;
  throw Error(fmt::format("the ONNX model is {} bytes, over the limit of {} bytes (2 GiB, "
                          "protobuf's limit for one message)",
                          bytes, kMaxOnnxModelBytes),
              where);
}

// Parses `bytes` into `model` with messages nested at most `nesting` deep; false on failure.
bool ParseNested(const std::string& bytes, int nesting, onnx::ModelProto& model) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetRecursionLimit(nesting);
  return model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

}  // namespace

ir::IRModule ImportOnnxModel(const std::string& bytes, const std::string& source_name,
                             const OnnxImportOptions& options) {
  ir::ErrorLocation where{.file = source_name};
  if (bytes.empty()) throw Error("not a valid ONNX model file: it is empty", where);
  CheckModelSize(bytes.size(), where);
  onnx::ModelProto model;
  if (!ParseNested(bytes, kMaxOnnxNesting, model)) {
    // Parsed again with room for deeper nesting (still bounded): success means that nesting,
    // not corrupt data, was what failed.
    onnx::ModelProto deeper;
    if (ParseNested(bytes, 4 * kMaxOnnxNesting, deeper)) {
      throw Error(fmt::format("the ONNX model nests its messages deeper than the limit of {} "
                              "levels (graphs inside attributes inside nodes ...)",
                              kMaxOnnxNesting),
                  where);
    }
    throw Error(fmt::format("not a valid ONNX model file: {} (the protobuf data is truncated or "
                            "corrupt, or the file is not an ONNX model)",
                            source_name),
                where);
  }
  try {
    return ImportModelProto(model, options);
  } catch (const Error& e) {
    throw e.WithFile(source_name);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while importing the model", where);
  } catch (const std::exception& e) {
    throw Error(fmt::format("cannot import the model: {}", e.what()), where);
  }
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> keys;
  for (const auto& [key, converter] : onnx_import::Converters()) keys.push_back(key);
  return keys;
}

void ParseSymbolBinding(const std::string& text, const std::string& option,
                        std::map<std::string, int64_t>& symbols) {
  auto eq = text.rfind('=');
  try {
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument(text);
    size_t used = 0;
    int64_t size = std::stoll(text.substr(eq + 1), &used);
    if (used != text.size() - eq - 1 || size < 0) throw std::invalid_argument(text);
    symbols[text.substr(0, eq)] = size;
  } catch (const std::exception&) {
    throw ir::Error(
        fmt::format("{} '{}' must look like NAME=SIZE (a non-negative size)", option, text));
  }
}

ir::IRModule ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::error_code error;
  std::uintmax_t size = std::filesystem::file_size(path, error);
  if (!error) CheckModelSize(size, {.file = path});
  return ImportOnnxModel(ReadFileBytes(path, "ONNX model"), path, options);
}

}  // namespace tandem::frontend
