// ConvertLayout: moves conv-heavy graphs into another data layout.
//
// Convolutions in NCHW/OIHW are rewritten to the target layout: NHWC (kernels HWIO) or blocked
// NCHW{x}c (kernels OIHW{x}i{x}o, the layout in which the innermost axis is a block of x
// channels). Values flow between layouts through layout_transform nodes, inserted only where a
// consumer needs another layout and shared between consumers; layout-agnostic ops (unary
// elementwise ops, binary ops whose operands are both in the layout, channel biases and scalars)
// stay in the converted layout, so a chain conv -> add(bias) -> relu -> conv transforms once at
// its start and once at its end. Weight transforms of constant weights fold away with
// FoldConstant. Every other op gets its operands back in their original layout, as does the
// function's result. Convolutions whose channels the block factor does not divide, grouped
// convolutions in blocked layouts, and convolutions not in NCHW/OIHW are left alone. In NHWC,
// pooling ops (max_pool2d, avg_pool2d, global_avg_pool2d: they take NHWC through their layout
// attribute) of a converted value stay in NHWC too, so a network's pools and its head need no
// transform of a large activation; so do Winograd convolutions (TuneConvAlgorithm's chains):
// their input and output transforms read and write NHWC, the batched GEMM between them has no
// layout; and so does a concatenation of activations one of which is in NHWC (an inception or
// fire module joining its branches along the channels), along the same axis in NHWC.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "passes/graph_utils.h"
#include "passes/pass_declaration.h"

namespace tandem::passes {

namespace {

const std::set<std::string> kUnary = {"relu", "sigmoid",    "tanh",  "exp",  "log",   "sqrt",
                                      "erf",  "abs",        "floor", "ceil", "round", "gelu",
                                      "clip", "leaky_relu", "elu",   "cast"};
const std::set<std::string> kBinary = {"add", "subtract", "multiply", "divide",
                                       "pow", "maximum",  "minimum",  "prelu"};
const std::set<std::string> kPooling = {"max_pool2d", "avg_pool2d", "global_avg_pool2d"};
const std::set<std::string> kWinogradTransforms = {"winograd_input_transform",
                                                   "winograd_output_transform"};

class LayoutConverter {
 public:
  LayoutConverter(const ir::GraphFunction& fn, std::string layout)
      : fn_(fn), layout_(std::move(layout)) {
    ir::Layout target(layout_);
    std::string primal = target.primal_axes();
    std::sort(primal.begin(), primal.end());
    if (primal != "CHNW") {
      throw ir::Error(
          fmt::format("ConvertLayout: layout '{}' must be NCHW, NHWC or NCHW<x>c", layout_));
    }
    block_ = target.SplitFactor('C');
    if (layout_ == "NHWC") {
      kernel_layout_ = "HWIO";
    } else if (layout_ == "NCHW") {
      kernel_layout_ = "OIHW";
    } else if (block_ > 1 && layout_ == fmt::format("NCHW{}c", block_)) {
      kernel_layout_ = fmt::format("OIHW{}i{}o", block_, block_);
    } else {
      throw ir::Error(
          fmt::format("ConvertLayout: layout '{}' must be NCHW, NHWC or NCHW<x>c", layout_));
    }
  }

  ir::GraphFunction Run() {
    map_.assign(fn_.nodes.size(), -1);
    layout_of_.assign(fn_.nodes.size(), "");
    for (size_t i = 0; i < fn_.nodes.size(); ++i) Visit(static_cast<ir::ValueId>(i));
    out_.name = fn_.name;
    out_.attrs = fn_.attrs;
    for (ir::ValueId p : fn_.params) out_.params.push_back(map_[static_cast<size_t>(p)]);
    out_.output = Original(fn_.output);
    return RemoveUnusedNodes(out_);
  }

 private:
  ir::ValueId Emit(ir::Node node) {
    if (node.kind == ir::NodeKind::kCall) {
      std::vector<ir::Type> operands;
      for (ir::ValueId in : node.inputs) operands.push_back(out_.type_of(in));
      node.type = ir::InferCallType(node.op, operands, node.attrs);
    }
    return AppendNode(out_, std::move(node));
  }

  ir::ValueId Transform(ir::ValueId new_id, const std::string& from, const std::string& to,
                        const std::string& name) {
    ir::Node n;
    n.kind = ir::NodeKind::kCall;
    n.op = "layout_transform";
    n.name = name;
    n.inputs = {new_id};
    n.attrs = ir::Attrs{{"src_layout", from}, {"dst_layout", to}};
    return Emit(std::move(n));
  }

  // The new id of old value `id` in its original layout.
  ir::ValueId Original(ir::ValueId id) { return InLayout(id, ""); }

  // The new id of old value `id` in `layout` ("" = its original layout, NCHW for converted
  // activations), transforming (once per value and layout) when needed.
  ir::ValueId InLayout(ir::ValueId id, const std::string& layout) {
    size_t i = static_cast<size_t>(id);
    const std::string& current = layout_of_[i];
    if (current == layout) return map_[i];
    auto key = std::make_pair(id, layout);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    ir::ValueId original = current.empty() ? map_[i] : cache_.at({id, ""});
    ir::ValueId result = layout.empty() ? original
                                        : Transform(original, "NCHW", layout,
                                                    fn_.node(id).name + "_" + SafeName(layout));
    cache_[key] = result;
    return result;
  }

  static std::string SafeName(const std::string& s) {
    std::string out;
    for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
  }

  // Records that old value `id` is available as `new_id` in `layout` (and, converted back, in
  // its original layout on demand).
  void Define(ir::ValueId id, ir::ValueId new_id, const std::string& layout) {
    size_t i = static_cast<size_t>(id);
    map_[i] = new_id;
    layout_of_[i] = layout;
    if (!layout.empty()) {
      ir::ValueId back = Transform(new_id, layout, "NCHW", fn_.node(id).name + "_nchw");
      cache_[{id, ""}] = back;
    }
  }

  bool IsActivation(ir::ValueId id) const {
    const ir::Type& t = fn_.type_of(id);
    return t.is_tensor() && t.tensor().rank() == 4;
  }

  // The shape of a channel bias for `layout` ([C,1,1] or [1,C,1,1] in NCHW), or false.
  bool IsChannelBias(ir::ValueId id, int64_t channels) const {
    const ir::Type& t = fn_.type_of(id);
    if (!t.is_tensor()) return false;
    const ir::Shape& s = t.tensor().shape;
    return (s == ir::Shape{channels, 1, 1}) || (s == ir::Shape{1, channels, 1, 1});
  }

  bool IsScalarLike(ir::ValueId id) const {
    const ir::Type& t = fn_.type_of(id);
    return t.is_tensor() && t.tensor().num_elements() == 1 && t.tensor().rank() <= 4;
  }

  // A channel bias in the converted layout. A per-channel value computed in the converted
  // layout (a squeeze-excite scale: 1x1 convolutions of a pooled activation) already is one.
  ir::ValueId ConvertBias(ir::ValueId id) {
    const ir::Shape& s = fn_.type_of(id).tensor().shape;
    bool four = s.size() == 4;
    if (four && layout_of_[static_cast<size_t>(id)] == layout_)
      return map_[static_cast<size_t>(id)];
    std::string from = four ? "NCHW" : "CHW";
    std::string to =
        layout_ == "NHWC" ? (four ? "NHWC" : "HWC") : (four ? layout_ : layout_.substr(1));
    auto key = std::make_pair(id, "bias:" + to);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    ir::ValueId result = Transform(Original(id), from, to, fn_.node(id).name + "_" + SafeName(to));
    cache_[key] = result;
    return result;
  }

  // A convolution weight in the converted kernel layout (one transform per weight).
  ir::ValueId ConvertWeight(ir::ValueId id) {
    auto key = std::make_pair(id, "weight:" + kernel_layout_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    ir::ValueId result = Transform(map_[static_cast<size_t>(id)], "OIHW", kernel_layout_,
                                   fn_.node(id).name + "_" + SafeName(kernel_layout_));
    cache_[key] = result;
    return result;
  }

  // Whether every operand of the concat `n` is a 4-d activation and one of them is in the
  // converted layout already (a concat of original NCHW values stays where it is).
  bool ConcatOfActivations(const ir::Node& n) const {
    bool converted = false;
    for (ir::ValueId in : n.inputs) {
      if (!IsActivation(in)) return false;
      converted = converted || !layout_of_[static_cast<size_t>(in)].empty();
    }
    int64_t axis = n.attrs.GetInt("axis");
    return converted && axis >= -4 && axis < 4;
  }

  bool ConvertibleConv(const ir::Node& n) const {
    if (n.op != "conv2d") return false;
    if (n.attrs.GetString("data_layout") != "NCHW" || n.attrs.GetString("kernel_layout") != "OIHW")
      return false;
    const ir::Shape& data = fn_.type_of(n.inputs[0]).tensor().shape;
    const ir::Shape& out = n.type.tensor().shape;
    if (block_ > 1) {
      if (n.attrs.GetInt("groups") != 1) return false;
      if (data[1] % block_ != 0 || out[1] % block_ != 0) return false;
    }
    return true;
  }

  void Visit(ir::ValueId id) {
    const ir::Node& node = fn_.node(id);
    if (node.kind == ir::NodeKind::kInput || node.kind == ir::NodeKind::kConstant) {
      map_[static_cast<size_t>(id)] = AppendNode(out_, node);
      return;
    }
    if (node.kind == ir::NodeKind::kCall && layout_ != "NCHW") {
      if (ConvertibleConv(node)) {
        ir::Node n = node;
        n.inputs = {InLayout(node.inputs[0], layout_), ConvertWeight(node.inputs[1])};
        n.attrs.Set("data_layout", layout_);
        n.attrs.Set("kernel_layout", kernel_layout_);
        Define(id, Emit(std::move(n)), layout_);
        return;
      }
      bool converted_input =
          !node.inputs.empty() && !layout_of_[static_cast<size_t>(node.inputs[0])].empty();
      if (kPooling.count(node.op) && converted_input && layout_ == "NHWC" &&
          node.attrs.GetString("layout") == "NCHW") {
        ir::Node n = node;
        n.inputs = {map_[static_cast<size_t>(node.inputs[0])]};
        n.attrs.Set("layout", layout_);
        Define(id, Emit(std::move(n)), layout_);
        return;
      }
      // Winograd's transforms take NHWC activations through their layout attribute: the
      // chain stays in NHWC and neither transform transposes.
      if (layout_ == "NHWC" && kWinogradTransforms.count(node.op) &&
          node.attrs.GetString("layout") == "NCHW") {
        ir::Node n = node;
        bool input_side = node.op == "winograd_input_transform";
        n.inputs = {input_side ? InLayout(node.inputs[0], layout_) : Original(node.inputs[0])};
        n.attrs.Set("layout", layout_);
        if (input_side) {
          map_[static_cast<size_t>(id)] = Emit(std::move(n));  // [a*a, P, C]: no layout
        } else {
          Define(id, Emit(std::move(n)), layout_);
        }
        return;
      }
      if (layout_ == "NHWC" && node.op == "concat" && IsActivation(id) &&
          ConcatOfActivations(node)) {
        // NCHW axis -> its position in NHWC.
        static constexpr int64_t kNhwcPosition[4] = {0, 3, 1, 2};
        int64_t axis = node.attrs.GetInt("axis");
        ir::Node n = node;
        for (ir::ValueId& in : n.inputs) in = InLayout(in, layout_);
        n.attrs.Set("axis", kNhwcPosition[axis < 0 ? axis + 4 : axis]);
        Define(id, Emit(std::move(n)), layout_);
        return;
      }
      if (kUnary.count(node.op) && converted_input) {
        ir::Node n = node;
        n.inputs = {map_[static_cast<size_t>(node.inputs[0])]};
        Define(id, Emit(std::move(n)), layout_);
        return;
      }
      if (kBinary.count(node.op) && node.inputs.size() == 2 && IsActivation(id)) {
        ir::ValueId a = node.inputs[0], b = node.inputs[1];
        bool a_conv = !layout_of_[static_cast<size_t>(a)].empty();
        bool b_conv = !layout_of_[static_cast<size_t>(b)].empty();
        int64_t channels = node.type.tensor().shape[1];
        auto operand = [&](ir::ValueId v) -> ir::ValueId {
          if (IsScalarLike(v)) return map_[static_cast<size_t>(v)];
          if (IsActivation(v) && fn_.type_of(v).tensor().shape == node.type.tensor().shape) {
            return InLayout(v, layout_);
          }
          if (IsChannelBias(v, channels)) return ConvertBias(v);
          return -1;
        };
        if (a_conv || b_conv) {
          ir::ValueId na = operand(a), nb = operand(b);
          if (na >= 0 && nb >= 0) {
            ir::Node n = node;
            n.inputs = {na, nb};
            Define(id, Emit(std::move(n)), layout_);
            return;
          }
        }
      }
    }
    // Anything else runs in the original layout.
    ir::Node n = node;
    for (ir::ValueId& in : n.inputs) in = Original(in);
    if (n.kind == ir::NodeKind::kCall) {
      map_[static_cast<size_t>(id)] = Emit(std::move(n));
    } else {
      map_[static_cast<size_t>(id)] = AppendNode(out_, std::move(n));
    }
  }

  const ir::GraphFunction& fn_;
  std::string layout_;
  std::string kernel_layout_;
  int64_t block_ = 1;
  ir::GraphFunction out_;
  std::vector<ir::ValueId> map_;
  std::vector<std::string> layout_of_;
  std::map<std::pair<ir::ValueId, std::string>, ir::ValueId> cache_;
};

}  // namespace

void RegisterConvertLayout(PassRegistry& registry) {
  struct Options {
    std::string layout = "NCHW16c";
  };
  RegisterFunctionPass<Options>(
      registry,
      {.name = "ConvertLayout",
       .summary =
           "Move convolutions and the layout-agnostic ops around them into NHWC or NCHW<x>c.",
       .required = {"InferType"},
       .arguments = {{"layout", &Options::layout, "target data layout: NCHW, NHWC or NCHW<x>c"}}},
      [](const ir::IRModule& module, PassContext&, const Options& options) {
        return MapGraphFunctions(module, [&](const ir::GraphFunction& fn) {
          return LayoutConverter(fn, options.layout).Run();
        });
      });
}

}  // namespace tandem::passes
