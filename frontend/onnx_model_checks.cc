#include "frontend/onnx_model_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "frontend/onnx_convert.h"
#include "ir/error.h"

namespace tandem::frontend::onnx_import {
namespace {

// Ops of the default domain whose meaning at inference has stayed the same since the given
// opset: Abs-6 dropped the legacy consumed_inputs attribute, PRelu-7 broadcasts the slope, the
// comparisons and And/Or/Xor broadcast from opset 7 on, the variadic ops from opset 8 on; later
// versions only added data types.
const std::map<std::string, int64_t>& UnchangedSince() {
  static const std::map<std::string, int64_t> table = {
      {"Abs", 6},           {"And", 7},        {"Ceil", 6},        {"Elu", 6},
      {"Equal", 7},         {"Exp", 6},        {"Floor", 6},       {"GlobalAveragePool", 1},
      {"GlobalMaxPool", 1}, {"Greater", 7},    {"HardSigmoid", 6}, {"LeakyRelu", 6},
      {"Less", 7},          {"Log", 6},        {"Max", 8},         {"Mean", 8},
      {"Min", 8},           {"Neg", 6},        {"Not", 1},         {"Or", 7},
      {"PRelu", 7},         {"Reciprocal", 6}, {"Relu", 6},        {"Selu", 6},
      {"Sigmoid", 6},       {"Softplus", 1},   {"Sqrt", 6},        {"Sum", 8},
      {"Tanh", 6},          {"Xor", 7}};
  return table;
}

// The same for the ops of the reduction, normalization, layout and resize converters: they read
// the attributes of every version since these (Upsample-7's scales attribute, Resize-10's
// asymmetric coordinates).
const std::map<std::string, int64_t>& ConvertedSince() {
  static const std::map<std::string, int64_t> table = {{"ArgMax", 1},
                                                       {"ArgMin", 1},
                                                       {"DepthToSpace", 1},
                                                       {"InstanceNormalization", 6},
                                                       {"LRN", 1},
                                                       {"ReduceL1", 1},
                                                       {"ReduceL2", 1},
                                                       {"ReduceLogSum", 1},
                                                       {"ReduceLogSumExp", 1},
                                                       {"ReduceMin", 1},
                                                       {"ReduceProd", 1},
                                                       {"ReduceSumSquare", 1},
                                                       {"Resize", 10},
                                                       {"SpaceToDepth", 1},
                                                       {"Tile", 6},
                                                       {"Upsample", 7}};
  return table;
}

// The oldest opset since which `op_type` has meant what its converter implements, or 0 when
// the converter handles opset 11 and later only.
int64_t OldestOpsetOf(const std::string& op_type) {
  for (const auto* table : {&UnchangedSince(), &ConvertedSince()}) {
    auto it = table->find(op_type);
    if (it != table->end()) return it->second;
  }
  return 0;
}

}  // namespace

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? fmt::format("#{} {}", index, node.op_type()) : node.name();
}

void CheckOpsSupported(const onnx::GraphProto& graph) {
  struct Unsupported {
    int count = 0;
    int first_index = 0;
    std::string first_node;
  };
  std::map<std::string, Unsupported> unsupported;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    std::string key = ConverterKey(node.domain(), node.op_type());
    if (Converters().count(key)) continue;
    Unsupported& entry = unsupported[key];
    if (entry.count++ == 0) {
      entry.first_index = i;
      entry.first_node = NodeLabel(node, i);
    }
  }
  if (unsupported.empty()) return;
  std::vector<std::pair<int, std::string>> order;  // (first index, key)
  for (const auto& [key, entry] : unsupported) order.push_back({entry.first_index, key});
  std::sort(order.begin(), order.end());
  std::vector<std::string> parts;
  for (const auto& [index, key] : order) {
    const Unsupported& entry = unsupported.at(key);
    parts.push_back(entry.count == 1 ? fmt::format("'{}' (node '{}')", key, entry.first_node)
                                     : fmt::format("'{}' ({} nodes, the first '{}')", key,
                                                   entry.count, entry.first_node));
  }
  const std::string& first = order.front().second;
  throw ir::Error(
      fmt::format("unsupported ONNX op{} {}", parts.size() == 1 ? "" : "s", fmt::join(parts, ", ")),
      {.op = first, .node = unsupported.at(first).first_node});
}

void CheckOldOpset(const onnx::GraphProto& graph, int64_t opset) {
  if (opset >= kOldestOpset) return;
  std::set<std::string> changed;
  for (const onnx::NodeProto& node : graph.node()) {
    std::string key = ConverterKey(node.domain(), node.op_type());
    if (Converters().count(key) == 0) continue;  // CheckOpsSupported names it
    int64_t oldest = OldestOpsetOf(node.op_type());
    if (key != node.op_type() || oldest == 0 || oldest > opset) {
      changed.insert(key);
    }
  }
  if (changed.empty()) return;
  throw ir::Error(
      fmt::format("the model uses ONNX opset {}; the importer supports opset 13 and later (and 11 "
                  "and 12 for most ops; older ones only for ops unchanged since, which {} {}): "
                  "convert it first, e.g. with onnx.version_converter.convert_version(model, 13)",
                  opset, fmt::join(changed, ", "), changed.size() == 1 ? "is not" : "are not"));
}

}  // namespace tandem::frontend::onnx_import
