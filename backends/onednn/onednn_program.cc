#include "backends/onednn/onednn_program.h"

namespace tandem::backends {

bool IsReferenceImplementation(const std::string& implementation) {
  return implementation.rfind("ref", 0) == 0 || implementation.find("simple") != std::string::npos;
}

void OnednnProgram::Add(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args,
                        std::string implementation) {
  steps_.push_back(Step{std::move(primitive), std::move(args), std::move(implementation)});
}

void OnednnProgram::Run(dnnl::stream& stream) const {
  for (const Step& step : steps_) step.primitive.execute(stream, step.args);
  stream.wait();
}

int64_t OnednnProgram::NumReorders() const {
  int64_t count = 0;
  for (const Step& step : steps_) count += step.implementation.rfind("reorder:", 0) == 0;
  return count;
}

std::string OnednnProgram::Implementations() const {
  std::string text;
  for (const Step& step : steps_) {
    if (!text.empty()) text += " + ";
    text += step.implementation;
  }
  return text;
}

dnnl::memory WrapTensor(const ir::Tensor& tensor, const dnnl::memory::dims& dims,
                        dnnl::memory::format_tag tag, OnednnContext& context) {
  dnnl::memory::desc desc(dims, dnnl::memory::data_type::f32, tag);
  return dnnl::memory(desc, context.engine, const_cast<void*>(tensor.raw_data()));
}

dnnl::memory WrapTensor(const ir::Tensor& tensor, const dnnl::memory::dims& dims,
                        const dnnl::memory::dims& strides, OnednnContext& context) {
  dnnl::memory::desc desc(dims, dnnl::memory::data_type::f32, strides);
  return dnnl::memory(desc, context.engine, const_cast<void*>(tensor.raw_data()));
}

dnnl::memory ReorderNow(const dnnl::memory& user, const dnnl::memory::desc& wanted,
                        OnednnContext& context) {
  if (user.get_desc() == wanted) return user;
  dnnl::memory packed(wanted, context.engine);
  dnnl::memory source = user;
  dnnl::reorder(source, packed).execute(context.stream, source, packed);
  context.stream.wait();
  return packed;
}

dnnl::primitive_attr UserScratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory ReorderInput(OnednnProgram& program, const dnnl::memory& user,
                          const dnnl::memory::desc& wanted, OnednnContext& context) {
  if (user.get_desc() == wanted) return user;
  dnnl::memory scratch(wanted, context.engine);
  dnnl::reorder::primitive_desc descriptor(user, scratch, UserScratchpad());
  program.Add(dnnl::reorder(descriptor), {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, scratch}},
              descriptor, "reorder");
  return scratch;
}

dnnl::memory OutputBuffer(const dnnl::memory& user, const dnnl::memory::desc& produced,
                          OnednnContext& context) {
  if (user.get_desc() == produced) return user;
  return dnnl::memory(produced, context.engine);
}

void FinishOutput(OnednnProgram& program, const dnnl::memory& produced, const dnnl::memory& user,
                  OnednnContext& context) {
  if (produced.get() == user.get()) return;
  dnnl::reorder::primitive_desc descriptor(produced, user, UserScratchpad());
  program.Add(dnnl::reorder(descriptor), {{DNNL_ARG_FROM, produced}, {DNNL_ARG_TO, user}},
              descriptor, "reorder");
}

}  // namespace tandem::backends
