// What the oneDNN backend's op compilers share: a view of the placed subgraph, the binding of
// its values to oneDNN memories, layout descriptors, epilogues as post-ops, and the compiled
// function the executor calls.
//
// A placed subgraph is a graph function: parameters (activations, or weights that are not
// constants), constants (weights), then the anchor op and its epilogue ops in a chain; its output
// is the chain's last value. Parameters are bound to memories whose data handle is set on every
// call; constants are bound once to memories over their data (kept alive by the function), and
// primitives that prefer another weight layout get a copy reordered at build time.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/external/external_backend.h"
#include "backends/onednn/onednn_program.h"
#include "ir/graph.h"

namespace tandem::backends {

// A compiled subgraph: the program, and which memories take the call's buffers.
class OnednnFunction : public ExternalFunction {
 public:
  OnednnFunction(std::shared_ptr<OnednnContext> context, OnednnProgram program,
                 std::vector<std::vector<dnnl::memory>> bound, std::vector<ir::Tensor> keep_alive);
  void Run(void* const* arguments) override;
  std::string Describe() const override { return program_.Implementations(); }
  int64_t reorders_per_call() const override { return program_.NumReorders(); }
  bool runs_on_openmp() const override { return true; }  // oneDNN in Debian is built on it

 private:
  std::shared_ptr<OnednnContext> context_;  // its own stream: functions may run concurrently
  OnednnProgram program_;
  std::vector<std::vector<dnnl::memory>> bound_;  // per call argument (params, then result)
  std::vector<ir::Tensor> keep_alive_;
};

// The logical dimensions and memory descriptor of a tensor whose primal axes are those of
// `canonical` (e.g. "NCHW"), in the order oneDNN numbers logical dimensions. Plain (no layout)
// tensors are taken as row-major in canonical order. A permutation of the canonical axes is
// described by strides; a layout that blocks the second canonical axis innermost by 8 or 16
// (NCHW8c, NCHW16c, NCW16c, NCDHW16c) by oneDNN's blocked format. Other layouts: nullopt.
std::optional<dnnl::memory::desc> LayoutDesc(const ir::TensorType& type,
                                             const std::string& canonical);
// `type` row-major: a plain descriptor of its shape.
dnnl::memory::desc PlainDesc(const ir::Shape& shape);

// Reads a subgraph and builds its program (one per Compile).
class OnednnCompiler {
 public:
  explicit OnednnCompiler(const ir::GraphFunction& subgraph);

  const ir::GraphFunction& subgraph() const { return subgraph_; }
  const ir::Node& anchor() const { return subgraph_.node(chain_.front()); }
  // The epilogue nodes after the anchor, in order.
  std::vector<const ir::Node*> Epilogue() const;
  // The anchor's operand `index`.
  ir::ValueId Operand(size_t index) const { return anchor().inputs.at(index); }
  bool IsConstant(ir::ValueId id) const {
    return subgraph_.node(id).kind == ir::NodeKind::kConstant;
  }
  // The data of a constant value, converted to `canonical` plain order when it has a layout.
  ir::Tensor ConstantIn(ir::ValueId id, const std::string& canonical);

  // A memory for value `id` (a parameter or a constant) described by `desc` (its data must
  // already be in that form: a constant's layout must agree).
  dnnl::memory Bind(ir::ValueId id, const dnnl::memory::desc& desc);
  // A memory over `data` (kept alive by the function).
  dnnl::memory Own(ir::Tensor data, const dnnl::memory::desc& desc);
  // The memory for the subgraph's result, described by `desc`.
  dnnl::memory BindResult(const dnnl::memory::desc& desc);

  // The epilogue as post-ops of a primitive whose result has logical dims `dims` in `canonical`
  // axes and the anchor's result type `result`. Throws ir::Error for an epilogue oneDNN cannot
  // take. The binary operands' memories go into `args` of the primitive. With `full_operand`
  // set, an operand of the result's full size that is an activation (a residual) is reordered
  // into that descriptor on every call (oneDNN's blocked kernels want it in their own layout).
  dnnl::primitive_attr PostOps(const std::string& canonical, const ir::TensorType& result,
                               std::unordered_map<int, dnnl::memory>& args,
                               const dnnl::memory::desc* full_operand = nullptr);
  // The first epilogue step as the primitive's bias, when it adds a constant that varies only
  // along logical axis `channel_axis` of the anchor's result (in `canonical` axes): oneDNN adds
  // a bias inside its kernel, where the same add as a binary post-op made MobileNetV2's
  // convolutions 15-25% slower. Returns the bias over its values in channel order, described as
  // [C] when `flat` (convolutions) or in the result's rank (matmul), and from then on PostOps
  // leaves that step out; nullopt (nothing changed) when the first step is not such an add.
  // Call it once, before PostOps.
  std::optional<dnnl::memory> TakeBias(const std::string& canonical, const ir::TensorType& result,
                                       size_t channel_axis, bool flat);
  // Whether an epilogue step takes an activation of the result's full size (a residual).
  bool HasFullSizeActivationOperand() const;

  OnednnProgram& program() { return program_; }
  OnednnContext& context() { return *context_; }
  std::unique_ptr<OnednnFunction> Finish();

 private:
  // The memory for `other`, the operand of an epilogue step besides the chained value, in the
  // logical dims of the result (see PostOps); an empty memory when it cannot be described.
  dnnl::memory EpilogueOperand(ir::ValueId other, const std::string& canonical,
                               const ir::TensorType& result,
                               const dnnl::memory::desc* full_operand);

  const ir::GraphFunction& subgraph_;
  std::vector<ir::ValueId> chain_;
  size_t first_post_op_ = 1;  // 2 once TakeBias took the first epilogue step
  std::shared_ptr<OnednnContext> context_;
  OnednnProgram program_;
  std::vector<std::vector<dnnl::memory>> bound_;
  std::vector<ir::Tensor> keep_alive_;
};

// A subgraph of one of the backend's patterns compiled into a oneDNN program (what
// OnednnBackend::Compile and libtandem_runtime's loader of exported models do): dispatched to
// the compiler of its anchor's op family. Throws ir::Error naming the subgraph for what oneDNN
// cannot do.
std::unique_ptr<ExternalFunction> CompileOnednnSubgraph(const ir::GraphFunction& subgraph);

// The compilers of each op family (one file each). Each throws ir::Error for what it cannot do.
std::unique_ptr<OnednnFunction> CompileOnednnConvolution(OnednnCompiler& compiler);
std::unique_ptr<OnednnFunction> CompileOnednnMatmul(OnednnCompiler& compiler);
std::unique_ptr<OnednnFunction> CompileOnednnNormalization(OnednnCompiler& compiler);
std::unique_ptr<OnednnFunction> CompileOnednnPooling(OnednnCompiler& compiler);

// "NC" + the spatial axes of a rank-`rank` activation ("NCW", "NCHW", "NCDHW").
std::string CanonicalActivation(size_t rank);

}  // namespace tandem::backends
