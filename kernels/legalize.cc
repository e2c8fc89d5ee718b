#include "kernels/legalize.h"

#include <fmt/format.h>

#include <unordered_map>

#include "ir/error.h"
#include "ir/kernel/kernel_structural.h"
#include "kernels/compute/lower.h"

namespace tandem::kernels {

namespace {

std::string SafeName(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out;
}

class Legalizer {
 public:
  Legalizer(const ir::IRModule& module, const LegalizeOptions& options)
      : module_(module), options_(options) {
    for (const auto& [name, kernel] : module.kernel_functions()) {
      by_hash_[ir::StructuralHash(*kernel)].push_back(name);
    }
  }

  ir::IRModule Run() {
    ir::IRModule out = module_;
    for (const auto& [name, fn] : module_.graph_functions()) out.Add(Rewrite(*fn, out));
    return out;
  }

 private:
  // The name of a kernel equal to `kernel` already in `module`, adding it when new.
  std::string Intern(ir::KernelFunction kernel, ir::IRModule& module) {
    ir::KernelFunction unnamed = kernel;
    uint64_t hash = 0;
    {
      unnamed.name = "";
      hash = ir::StructuralHash(unnamed);
    }
    for (const std::string& existing : by_hash_[hash]) {
      ir::KernelFunction other = module.GetKernel(existing);
      other.name = "";
      if (ir::StructuralEqual(other, unnamed)) return existing;
    }
    std::string name = kernel.name;
    for (int i = 1; module.HasKernel(name); ++i) name = fmt::format("{}_{}", kernel.name, i);
    kernel.name = name;
    module.AddKernel(std::move(kernel));
    by_hash_[hash].push_back(name);
    return name;
  }

  ir::GraphFunction Rewrite(const ir::GraphFunction& fn, ir::IRModule& module) {
    ir::GraphFunction out = fn;
    for (ir::Node& node : out.nodes) {
      if (node.kind != ir::NodeKind::kCall) continue;
      std::vector<ir::TensorType> inputs;
      for (ir::ValueId id : node.inputs) inputs.push_back(fn.type_of(id).tensor());
      std::string base = SafeName(node.op);
      ir::KernelFunction kernel;
      try {
        kernel = LowerOpCall(base, node.op, node.attrs, inputs, node.type);
        if (options_.apply_default_schedule) {
          kernel = ApplyDefaultSchedule(kernel, options_.schedule).function();
        }
      } catch (const ir::Error& e) {
        throw e.WithNode(node.name).WithPass("Legalize");
      }
      node.kind = ir::NodeKind::kCallKernel;
      node.callee = Intern(std::move(kernel), module);
    }
    return out;
  }

  const ir::IRModule& module_;
  const LegalizeOptions& options_;
  std::unordered_map<uint64_t, std::vector<std::string>> by_hash_;
};

}  // namespace

ir::IRModule Legalize(const ir::IRModule& module, const LegalizeOptions& options) {
  return Legalizer(module, options).Run();
}

}  // namespace tandem::kernels
