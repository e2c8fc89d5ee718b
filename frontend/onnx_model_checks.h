// Internal to the ONNX importer: checks of a whole model's graph made before any node is
// converted, so that what makes a model unimportable is reported at once.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace tandem::frontend::onnx_import {

// Opsets older than this differ from opset 13 in ops the importer does not translate back;
// older models import only as CheckOldOpset allows.
inline constexpr int64_t kOldestOpset = 11;

// The name of a node in messages: its name, or "#<index> <op type>" when it has none.
std::string NodeLabel(const onnx::NodeProto& node, int index);

// Throws one ir::Error naming every op type of `graph` without a converter (with its domain
// unless that is the default one), each with its node count and first node, in the order they
// first appear: "unsupported ONNX ops 'Hardmax' (2 nodes, the first 'h1'), 'com.microsoft.
// Attention' (node 'attn')". The error's location is the first such node.
void CheckOpsSupported(const onnx::GraphProto& graph);

// Throws ir::Error for a model of an ai.onnx `opset` older than kOldestOpset unless every op of
// `graph` that has a converter has meant the same since that opset (later versions of it only
// added data types); the message names the ops that have not.
void CheckOldOpset(const onnx::GraphProto& graph, int64_t opset);

}  // namespace tandem::frontend::onnx_import
