// oneDNN programs: a fixed sequence of primitive executions that computes one subgraph (for the
// oneDNN backend) or one benchmark workload from the caller's buffers into the caller's output.
//
// Setup (weight reorders into the layout a primitive prefers, batch-norm folding) happens when a
// program is made; Run executes only what a real call has to do per input: the primitives and,
// when a program uses layouts other than the caller's, the reorders of the activations into and
// out of them (counted by NumReorders, so reports can say what a placement costs).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <unordered_map>
#include <vector>

#include "backends/onednn/onednn_isa_pinning.h"
#include "ir/error.h"
#include "ir/tensor.h"

namespace tandem::backends {

// The engine and stream the programs of one user (a benchmark run, an executable) use.
struct OnednnContext {
  bool isa_fixed = EnsureOnednnIsaFixed();  // first: before oneDNN dispatches anything
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

// Whether `implementation` (a primitive descriptor's impl_info_str) is one of oneDNN's reference
// or "simple" implementations: plain C++ loops, many times slower than its JIT kernels and than
// our generated code.
bool IsReferenceImplementation(const std::string& implementation);

class OnednnProgram {
 public:
  explicit OnednnProgram(std::string label) : label_(std::move(label)) {}

  // Appends a primitive executed with `args` on every Run; `implementation` names the kernel
  // oneDNN picked (for the report).
  void Add(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args,
           std::string implementation);
  // The same for a primitive made with UserScratchpad(): its scratchpad is allocated here, so
  // the program may run on any thread (oneDNN's own scratchpad is per thread of creation).
  // Throws ir::Error when oneDNN has only a reference implementation for it: a subgraph oneDNN
  // would run that slowly is not one the backend takes.
  template <typename PrimitiveDescriptor>
  void Add(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args,
           const PrimitiveDescriptor& descriptor, const std::string& kind) {
    std::string implementation = descriptor.impl_info_str();
    if (IsReferenceImplementation(implementation)) {
      throw ir::Error("oneDNN has only its reference implementation (" + implementation +
                      ") for this " + kind);
    }
    if (descriptor.scratchpad_desc().get_size() > 0) {
      args[DNNL_ARG_SCRATCHPAD] =
          dnnl::memory(descriptor.scratchpad_desc(), descriptor.get_engine());
    }
    implementation = kind + ":" + implementation;
    int post_ops = descriptor.get_primitive_attr().get_post_ops().len();
    bool bias = args.count(DNNL_ARG_BIAS) > 0;
    if (bias || post_ops > 0) {
      std::string epilogue = bias ? "bias" : "";
      if (post_ops > 0) {
        epilogue += (bias ? ", " : "") + std::to_string(post_ops) +
                    (post_ops == 1 ? " post-op" : " post-ops");
      }
      implementation += " (" + epilogue + ")";
    }
    Add(std::move(primitive), std::move(args), implementation);
  }
  // Executes every step in order and waits for the stream.
  void Run(dnnl::stream& stream) const;

  // Which variant of the workload this is ("plain activations", "blocked activations" ...).
  const std::string& label() const { return label_; }
  // The implementations of the steps, joined by " + ", each with what its epilogue runs as
  // ("convolution:jit_1x1:avx2 (bias, 1 post-op)").
  std::string Implementations() const;
  // How many of the steps are reorders of activations (executed on every Run).
  int64_t NumReorders() const;
  size_t num_steps() const { return steps_.size(); }
  // Drops the steps after the first `count` (undoes a tentative Add).
  void Truncate(size_t count) { steps_.resize(std::min(count, steps_.size())); }

 private:
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
    std::string implementation;
  };
  std::string label_;
  std::vector<Step> steps_;
};

// `attr` (default: empty) asking for a user-managed scratchpad (see OnednnProgram::Add).
dnnl::primitive_attr UserScratchpad(dnnl::primitive_attr attr = {});

// A memory object over the storage of `tensor` (which must outlive it), f32, of the given dims
// and plain format.
dnnl::memory WrapTensor(const ir::Tensor& tensor, const dnnl::memory::dims& dims,
                        dnnl::memory::format_tag tag, OnednnContext& context);
// The same with explicit strides (for views such as a transposed operand).
dnnl::memory WrapTensor(const ir::Tensor& tensor, const dnnl::memory::dims& dims,
                        const dnnl::memory::dims& strides, OnednnContext& context);

// `user` in layout `wanted`: `user` itself when the layouts agree, else a new memory filled by a
// reorder executed now (setup time, outside any timed region).
dnnl::memory ReorderNow(const dnnl::memory& user, const dnnl::memory::desc& wanted,
                        OnednnContext& context);

// The memory a primitive should read for input `user` when it wants layout `wanted`: `user`
// itself when the layouts agree, else a scratch memory that a reorder step appended to
// `program` fills on every Run.
dnnl::memory ReorderInput(OnednnProgram& program, const dnnl::memory& user,
                          const dnnl::memory::desc& wanted, OnednnContext& context);

// The memory a primitive should write when it produces layout `produced` and the caller wants
// its result in `user`: `user` itself when the layouts agree, else a scratch memory. Call
// FinishOutput after adding the primitive.
dnnl::memory OutputBuffer(const dnnl::memory& user, const dnnl::memory::desc& produced,
                          OnednnContext& context);
// Appends the reorder from `produced` back to `user` when they are different memories.
void FinishOutput(OnednnProgram& program, const dnnl::memory& produced, const dnnl::memory& user,
                  OnednnContext& context);

}  // namespace tandem::backends
