// oneDNN programs for the operator benchmark: a fixed sequence of primitive executions that
// computes one workload from the caller's plain (row-major) buffers into a plain output buffer.
//
// Setup (weight reorders into the layout a primitive prefers, batch-norm folding) happens when a
// program is made; Run executes only what a real call has to do per input: the primitives and,
// when a program uses blocked activations, the reorders of the activations into and out of
// that layout.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/tensor.h"

namespace tandem::bench {

// The engine and stream every program of one benchmark run uses.
struct OnednnContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

class OnednnProgram {
 public:
  explicit OnednnProgram(std::string label) : label_(std::move(label)) {}

  // Appends a primitive executed with `args` on every Run; `implementation` names the kernel
  // oneDNN picked (for the report).
  void Add(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args,
           std::string implementation);
  // Executes every step in order and waits for the stream.
  void Run(dnnl::stream& stream) const;

  // Which variant of the workload this is ("plain activations", "blocked activations" ...).
  const std::string& label() const { return label_; }
  // The implementations of the steps, joined by " + ".
  std::string Implementations() const;

 private:
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
    std::string implementation;
  };
  std::string label_;
  std::vector<Step> steps_;
};

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

}  // namespace tandem::bench
