#include "passes/conv_algorithm.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "passes/graph_utils.h"
#include "passes/heuristic/rewrite_helpers.h"

namespace tandem::passes {

namespace {

const std::map<std::string, int64_t>& Algorithms() {
  static const std::map<std::string, int64_t> algorithms{{"winograd_2x2", 2}, {"winograd_4x4", 4}};
  return algorithms;
}

int64_t TileOf(const std::string& algorithm) {
  auto it = Algorithms().find(algorithm);
  if (it == Algorithms().end()) {
    throw ir::Error(fmt::format(
        "unknown convolution algorithm '{}' (known: direct, winograd_2x2, winograd_4x4)",
        algorithm));
  }
  return it->second;
}

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

std::vector<std::string> SplitOn(const std::string& text, char separator) {
  std::vector<std::string> parts;
  if (Trim(text).empty()) return {""};
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(Trim(part));
  if (!text.empty() && text.back() == separator) parts.push_back("");
  return parts;
}

bool IsFloatTensor(const ir::Type& type, const std::string& allowed_layout = "") {
  return type.is_tensor() &&
         (type.tensor().layout.empty() || type.tensor().layout == allowed_layout) &&
         (type.tensor().dtype == ir::DataType::kFloat32 ||
          type.tensor().dtype == ir::DataType::kFloat64);
}

bool IsNhwc(const ir::Node& conv) {
  return conv.attrs.GetString("data_layout") == "NHWC";
}

}  // namespace

bool IsWinogradEligible(const ir::GraphFunction& function, ir::ValueId id) {
  const ir::Node& node = function.node(id);
  if (node.kind != ir::NodeKind::kCall || node.op != "conv2d" || node.inputs.size() != 2) {
    return false;
  }
  const std::string& data_layout = node.attrs.GetString("data_layout");
  const std::string& kernel_layout = node.attrs.GetString("kernel_layout");
  bool nchw = data_layout == "NCHW" && kernel_layout == "OIHW";
  bool nhwc = data_layout == "NHWC" && kernel_layout == "HWIO";
  if (!nchw && !nhwc) return false;
  std::string tag = nhwc ? "NHWC" : "";
  if (!IsFloatTensor(node.type, tag)) return false;
  const ir::Type& data = function.type_of(node.inputs[0]);
  const ir::Type& weight = function.type_of(node.inputs[1]);
  if (!IsFloatTensor(data, tag) || !IsFloatTensor(weight, kernel_layout)) return false;
  const ir::Shape& w = weight.tensor().shape;
  if (w.size() != 4 || w[nhwc ? 0 : 2] != 3 || w[nhwc ? 1 : 3] != 3) return false;
  const std::vector<int64_t> ones{1, 1};
  if (node.attrs.GetInts("strides") != ones || node.attrs.GetInts("dilation") != ones ||
      node.attrs.GetInt("groups") != 1) {
    return false;
  }
  // A convolution marked for an external backend is that backend's to compute.
  if (node.annotations.Has("backend") && node.annotations.GetString("backend", "llvm") != "llvm") {
    return false;
  }
  return true;
}

std::vector<std::string> EligibleConvolutions(const ir::GraphFunction& function) {
  std::vector<std::string> names;
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    if (IsWinogradEligible(function, static_cast<ir::ValueId>(i))) {
      names.push_back(function.nodes[i].name);
    }
  }
  return names;
}

ir::GraphFunction RewriteConvAlgorithms(const ir::GraphFunction& function,
                                        const std::map<std::string, int64_t>& tiles) {
  std::map<ir::ValueId, int64_t> rewrite;
  for (const auto& [name, tile] : tiles) {
    ir::ValueId id = function.Find(name);
    if (id < 0) {
      throw ir::Error(fmt::format("function {} has no node named '{}'", function.name, name));
    }
    if (!IsWinogradEligible(function, id)) {
      throw ir::Error(fmt::format(
          "node '{}' of function {} is not a Winograd-eligible convolution (conv2d NCHW/OIHW or "
          "NHWC/HWIO, 3x3, stride 1, dilation 1, groups 1, f32/f64)",
          name, function.name));
    }
    if (tile != 2 && tile != 4) {
      throw ir::Error(fmt::format("Winograd tile of '{}' must be 2 or 4 but is {}", name, tile));
    }
    rewrite[id] = tile;
  }
  if (rewrite.empty()) return function;
  bool folded = false;
  ir::GraphFunction out = RewriteNodes(
      function,
      [&](ir::ValueId id, ir::GraphFunction& out,
          const std::vector<ir::ValueId>& map) -> ir::ValueId {
        auto it = rewrite.find(id);
        if (it == rewrite.end()) return -1;
        const ir::Node& conv = function.node(id);
        ir::Attrs annotations = conv.annotations;
        annotations.Erase("group");
        ir::Attrs tile{{"tile", it->second}};
        ir::ValueId data = map[static_cast<size_t>(conv.inputs[0])];
        bool nhwc = IsNhwc(conv);
        // The filter transform takes OIHW filters: an HWIO one is transposed first.
        ir::Attrs to_oihw{{"src_layout", std::string("HWIO")}, {"dst_layout", std::string("OIHW")}};
        ir::ValueId weight;
        if (const ir::Tensor* value = ConstantValue(function, conv.inputs[1])) {
          ir::Tensor filters =
              nhwc ? EvaluateConstant("layout_transform", {*value}, to_oihw) : *value;
          weight =
              AppendConstant(out, EvaluateConstant("winograd_weight_transform", {filters}, tile),
                             conv.name + "_winograd_weight");
          folded = true;
        } else {
          ir::ValueId filters = map[static_cast<size_t>(conv.inputs[1])];
          if (nhwc) {
            filters = AppendCall(out, "layout_transform", {filters}, to_oihw,
                                 conv.name + "_weight_oihw", annotations);
          }
          weight = AppendCall(out, "winograd_weight_transform", {filters}, tile,
                              conv.name + "_weight_transform", annotations);
        }
        ir::Attrs input_attrs = tile;
        input_attrs.Set("padding", conv.attrs.GetInts("padding"));
        if (nhwc) input_attrs.Set("layout", std::string("NHWC"));
        ir::ValueId transformed = AppendCall(out, "winograd_input_transform", {data}, input_attrs,
                                             conv.name + "_input_transform", annotations);
        ir::ValueId product = AppendCall(out, "batch_matmul", {transformed, weight}, {},
                                         conv.name + "_batch_matmul", annotations);
        ir::Attrs output_attrs = tile;
        const ir::Shape& result = conv.type.tensor().shape;
        output_attrs.Set("output_shape",
                         nhwc ? ir::Shape{result[0], result[3], result[1], result[2]} : result);
        if (nhwc) output_attrs.Set("layout", std::string("NHWC"));
        return AppendCall(out, "winograd_output_transform", {product}, output_attrs, conv.name,
                          annotations);
      });
  // The original weights are dead once transformed at rewrite time.
  return folded ? RemoveUnusedNodes(out) : out;
}

std::map<std::string, int64_t> ParseConvAlgorithmText(const std::string& text,
                                                      const ir::GraphFunction& function) {
  std::string trimmed = Trim(text);
  std::map<std::string, int64_t> tiles;
  if (trimmed == "direct") return tiles;
  if (trimmed.find(':') == std::string::npos) {
    int64_t tile = TileOf(trimmed);
    for (const std::string& name : EligibleConvolutions(function)) tiles[name] = tile;
    return tiles;
  }
  for (const std::string& entry : SplitOn(trimmed, ';')) {
    size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      throw ir::Error(
          fmt::format("convolution algorithm text '{}': entry '{}' is not 'algorithm:conv,conv...'",
                      text, entry));
    }
    int64_t tile = TileOf(Trim(entry.substr(0, colon)));
    for (const std::string& name : SplitOn(entry.substr(colon + 1), ',')) {
      if (name.empty()) {
        throw ir::Error(fmt::format("convolution algorithm text '{}' has an empty name", text));
      }
      ir::ValueId id = function.Find(name);
      if (id < 0 || !IsWinogradEligible(function, id)) {
        throw ir::Error(fmt::format(
            "convolution algorithm text '{}': '{}' is not an eligible convolution of {}", text,
            name, function.name));
      }
      if (!tiles.emplace(name, tile).second) {
        throw ir::Error(
            fmt::format("convolution algorithm text '{}' names '{}' twice", text, name));
      }
    }
  }
  return tiles;
}

std::string ConvAlgorithmText(const std::map<std::string, int64_t>& tiles) {
  if (tiles.empty()) return "direct";
  std::vector<std::string> entries;
  for (const auto& [algorithm, tile] : Algorithms()) {
    std::vector<std::string> names;
    for (const auto& [name, t] : tiles) {
      if (t == tile) names.push_back(name);
    }
    if (!names.empty()) entries.push_back(fmt::format("{}:{}", algorithm, fmt::join(names, ",")));
  }
  return fmt::format("{}", fmt::join(entries, ";"));
}

ir::IRModule ApplyConvAlgorithm(const ir::IRModule& module, const std::string& function_name,
                                const std::string& text) {
  const ir::GraphFunction& function = module.Get(function_name);
  if (!function.ExternBackend().empty()) {
    throw ir::Error(
        fmt::format("function {} is placed on backend {}; its convolutions are not "
                    "rewritten",
                    function_name, function.ExternBackend()));
  }
  std::map<std::string, int64_t> tiles = ParseConvAlgorithmText(text, function);
  if (tiles.empty()) return module;
  ir::IRModule result = module;
  result.Add(RewriteConvAlgorithms(function, tiles));
  return result;
}

}  // namespace tandem::passes
