#include "backends/llvm/nvptx_codegen.h"

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <set>

#include "backends/llvm/codegen_internal.h"
#include "backends/llvm/jit.h"
#include "ir/error.h"
#include "ir/kernel/functor.h"
#include "ir/target.h"

namespace tandem::backends {

using ir::Error;

namespace codegen {

int ThreadIndexSlot(ir::ForKind kind) {
  return (ir::IsBlockIndex(kind) ? 0 : 3) + ir::ThreadBindingAxis(kind);
}

void KernelCodegen::GenerateGpuKernel(const std::set<const ir::BufferNode*>& written) {
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(context_);
  std::vector<llvm::Type*> types(kernel_.params.size(), ptr);
  auto* kernel = llvm::Function::Create(llvm::FunctionType::get(builder_.getVoidTy(), types, false),
                                        llvm::Function::ExternalLinkage, kernel_.name, module_);
  if (kernel->getName() != kernel_.name) {
    throw Error(fmt::format("function name '{}' is already used in this module", kernel_.name));
  }
  kernel->setDoesNotThrow();
  for (size_t k = 0; k < kernel_.params.size(); ++k) {
    unsigned arg = static_cast<unsigned>(k);
    kernel->addParamAttr(arg, llvm::Attribute::NoAlias);
    kernel->addParamAttr(arg, llvm::Attribute::NoCapture);
    // Each buffer is its own device allocation (256-byte aligned).
    kernel->addParamAttr(arg, llvm::Attribute::getWithAlignment(context_, llvm::Align(16)));
    if (!written.count(kernel_.params[k].get()))
      kernel->addParamAttr(arg, llvm::Attribute::ReadOnly);
    kernel->getArg(arg)->setName(kernel_.params[k]->name);
  }
  // The entry is a kernel, launched with at most this many threads per block.
  llvm::NamedMDNode* annotations = module_.getOrInsertNamedMetadata("nvvm.annotations");
  auto annotate = [&](const char* key, int64_t value) {
    annotations->addOperand(llvm::MDNode::get(
        context_,
        {llvm::ValueAsMetadata::get(kernel), llvm::MDString::get(context_, key),
         llvm::ConstantAsMetadata::get(builder_.getInt32(static_cast<uint32_t>(value)))}));
  };
  annotate("kernel", 1);
  annotate("maxntidx", gpu_->extents[3]);
  annotate("maxntidy", gpu_->extents[4]);
  annotate("maxntidz", gpu_->extents[5]);

  function_ = kernel;
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", kernel);
  auto* start = llvm::BasicBlock::Create(context_, "start", kernel);
  llvm::BranchInst::Create(start, entry_block_);
  builder_.SetInsertPoint(start);
  for (size_t k = 0; k < kernel_.params.size(); ++k) {
    buffers_[kernel_.params[k].get()] = kernel->getArg(static_cast<unsigned>(k));
  }
  Emit(kernel_.body);
  builder_.CreateRetVoid();
}

void KernelCodegen::EmitThreadBound(const ir::ForNode* loop) {
  if (!gpu_) {
    throw Error(fmt::format(
        "loop '{}' is bound to {}: kernels with thread bindings compile for the cuda target only",
        loop->loop_var->name, ir::ToString(loop->for_kind)));
  }
  static const llvm::Intrinsic::ID kIndices[6] = {
      llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
      llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
      llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y,   llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z};
  int slot = ThreadIndexSlot(loop->for_kind);
  llvm::Value* index = builder_.CreateZExt(builder_.CreateIntrinsic(kIndices[slot], {}, {}),
                                           builder_.getInt64Ty(), loop->loop_var->name);
  bool threads = !ir::IsBlockIndex(loop->for_kind);
  auto body = [&] {
    ScopedEntry<std::unordered_map<const ir::ExprNode*, CgValue>> bind(
        vars_, loop->loop_var.get(),
        LoopVarValue(loop->loop_var, Uniform(index, ir::DataType::kInt64)));
    if (threads) ++thread_loop_depth_;
    Emit(loop->body);
    if (threads) --thread_loop_depth_;
  };
  if (loop->extent < gpu_->extents[slot]) {
    llvm::Value* inside = builder_.CreateICmpULT(index, builder_.getInt64(loop->extent));
    EmitConditional(Uniform(inside, ir::DataType::kBool), body, {});
  } else {
    body();
  }
}

}  // namespace codegen

namespace {

constexpr int64_t kMaxThreadsPerBlock = 1024;
const char* const kTriple = "nvptx64-nvidia-cuda";

std::string EntryName(const std::string& kernel, size_t launch) {
  std::string name = kernel;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "k_" + name;
  return fmt::format("{}_{}", name, launch);
}

std::unique_ptr<llvm::TargetMachine> NvptxTargetMachine(const std::string& arch, int opt_level) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!target) throw Error("LLVM has no NVPTX back end: " + error);
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
  llvm::CodeGenOpt::Level level = opt_level <= 0   ? llvm::CodeGenOpt::None
                                  : opt_level == 1 ? llvm::CodeGenOpt::Less
                                  : opt_level == 2 ? llvm::CodeGenOpt::Default
                                                   : llvm::CodeGenOpt::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(kTriple, arch, "", options, std::nullopt, std::nullopt, level));
  if (!machine) throw Error(fmt::format("cannot create an NVPTX target machine for {}", arch));
  return machine;
}

// Calls of math functions NVPTX cannot lower become calls of libdevice's (LLVM intrinsics of
// the same signature, and the libm names the CPU code generator calls for f64).
bool UseLibdevice(llvm::Module& module) {
  static const std::map<std::string, std::string> kLibdevice = {
      {"llvm.exp.f32", "__nv_expf"}, {"llvm.exp.f64", "__nv_exp"},  {"llvm.log.f32", "__nv_logf"},
      {"llvm.log.f64", "__nv_log"},  {"llvm.pow.f32", "__nv_powf"}, {"llvm.pow.f64", "__nv_pow"},
      {"erf", "__nv_erf"},           {"tanh", "__nv_tanh"},         {"exp", "__nv_exp"},
      {"log", "__nv_log"},           {"erff", "__nv_erff"},         {"tanhf", "__nv_tanhf"}};
  bool used = false;
  std::vector<llvm::Function*> declarations;
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) declarations.push_back(&f);
  }
  for (llvm::Function* f : declarations) {
    auto it = kLibdevice.find(f->getName().str());
    if (it == kLibdevice.end()) continue;
    llvm::FunctionCallee replacement = module.getOrInsertFunction(it->second, f->getFunctionType());
    f->replaceAllUsesWith(replacement.getCallee());
    f->eraseFromParent();
    used = true;
  }
  return used;
}

void LinkLibdevice(llvm::Module& module) {
#ifdef TANDEM_CUDA_LIBDEVICE
  const char* path = TANDEM_CUDA_LIBDEVICE;
#else
  const char* path = "";
#endif
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer || !*path) {
    throw Error(
        fmt::format("a math function needs the CUDA toolkit's libdevice, which this build "
                    "did not find ('{}')",
                    path));
  }
  auto library = llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!library) {
    throw Error(
        fmt::format("cannot read libdevice '{}': {}", path, llvm::toString(library.takeError())));
  }
  (*library)->setTargetTriple(module.getTargetTriple());
  (*library)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::LinkOnlyNeeded)) {
    throw Error(fmt::format("cannot link libdevice '{}'", path));
  }
}

}  // namespace

void CheckCudaArchitecture(const std::string& arch) {
  const auto& known = ir::CudaArchitectures();
  if (std::find(known.begin(), known.end(), arch) == known.end()) {
    std::string list;
    for (const std::string& a : known) list += (list.empty() ? "" : ", ") + a;
    throw Error(fmt::format("unknown CUDA architecture '{}' (supported: {})", arch, list));
  }
}

// Steps:
//   1. the root block's statements, one per launch, and its allocations, the scratch buffers;
//   2. per statement, the largest extent bound to each thread index (its launch extents);
//   3. per statement, a kernel function whose root block holds only that statement.
std::vector<GpuLaunchSpec> SplitGpuLaunches(const ir::KernelFunction& kernel) {
  // 1. Statements.
  const auto* root = ir::As<ir::BlockRealizeNode>(kernel.body);
  if (!root || !root->block) {
    throw Error(fmt::format("kernel '{}': the body is not a root block", kernel.name));
  }
  std::vector<ir::Stmt> statements;
  if (const auto* seq = ir::As<ir::SeqNode>(root->block->body)) {
    statements = seq->stmts;
  } else if (root->block->body) {
    statements.push_back(root->block->body);
  }
  std::vector<ir::Buffer> params = kernel.params;
  params.insert(params.end(), root->block->alloc_buffers.begin(), root->block->alloc_buffers.end());
  std::vector<GpuLaunchSpec> launches;
  for (const ir::Stmt& statement : statements) {
    // 2. Launch extents.
    codegen::GpuLaunch extents;
    ir::VisitStmtTree(statement, [&](const ir::Stmt& s) {
      const auto* loop = ir::As<ir::ForNode>(s);
      if (!loop || !ir::IsThreadBinding(loop->for_kind)) return;
      int64_t& extent = extents.extents[codegen::ThreadIndexSlot(loop->for_kind)];
      extent = std::max(extent, loop->extent);
    });
    GpuLaunchSpec launch;
    launch.entry = EntryName(kernel.name, launches.size());
    for (int axis = 0; axis < 3; ++axis) {
      launch.grid[axis] = extents.extents[axis];
      launch.block[axis] = extents.extents[3 + axis];
    }
    int64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
    if (threads > kMaxThreadsPerBlock) {
      throw Error(fmt::format("kernel '{}': launch {} has {} threads per block (at most {})",
                              kernel.name, launches.size(), threads, kMaxThreadsPerBlock));
    }
    // 3. Its kernel function.
    auto block = std::make_shared<ir::BlockNode>(*root->block);
    block->alloc_buffers.clear();
    block->body = statement;
    launch.function.name = launch.entry;
    launch.function.params = params;
    launch.function.num_outputs =
        kernel.num_outputs + static_cast<int>(root->block->alloc_buffers.size());
    launch.function.body = ir::MakeBlockRealize(root->iter_values, root->predicate, block);
    launch.function.attrs = kernel.attrs;
    launches.push_back(std::move(launch));
  }
  return launches;
}

// Steps:
//   1. split into launches; each launch's kernel function generated into one LLVM module;
//   2. math calls mapped to libdevice and libdevice linked when any is used, everything but the
//      entries internalized;
//   3. verified, optimized, checked for calls left undefined, and emitted as PTX.
GpuProgram CompileGpuKernel(const ir::KernelFunction& kernel, const GpuCodegenOptions& options) {
  CheckCudaArchitecture(options.arch);
  if (options.opt_level < 0 || options.opt_level > 3) {
    throw Error(fmt::format("codegen: opt_level must be in [0, 3] but is {}", options.opt_level));
  }
  GpuProgram program;
  program.name = kernel.name;
  program.arch = options.arch;
  program.params = kernel.params;
  program.num_outputs = kernel.num_outputs;
  // 1. Launches ("local" and "shared" buffers shrunk to one thread's or one thread block's tile
  // first).
  ir::KernelFunction compacted = codegen::CompactGpuBuffers(kernel);
  program.launches = SplitGpuLaunches(compacted);
  if (const auto* root = ir::As<ir::BlockRealizeNode>(compacted.body)) {
    program.scratch = root->block->alloc_buffers;
    for (const ir::Buffer& buffer : program.scratch) {
      if (buffer->scope == "shared") {
        throw Error(fmt::format(
            "kernel '{}': the \"shared\" buffer '{}' does not shrink to one thread block's "
            "tile (compute its producer under the loops of the block that reads it)",
            kernel.name, buffer->name));
      }
    }
  }
  auto machine = NvptxTargetMachine(options.arch, options.opt_level);
  llvm::LLVMContext context;
  auto module = std::make_unique<llvm::Module>(kernel.name, context);
  module->setTargetTriple(kTriple);
  module->setDataLayout(machine->createDataLayout());
  CodegenOptions cpu_options;
  cpu_options.opt_level = options.opt_level;
  codegen::FunctionAttributes attributes{options.arch, "", 0};
  std::set<std::string> entries;
  for (const GpuLaunchSpec& launch : program.launches) {
    codegen::GpuLaunch extents;
    for (int axis = 0; axis < 3; ++axis) {
      extents.extents[axis] = launch.grid[axis];
      extents.extents[3 + axis] = launch.block[axis];
    }
    try {
      codegen::KernelCodegen(*module, launch.function, cpu_options, attributes, &extents)
          .Generate();
    } catch (const Error& e) {
      throw Error(fmt::format("kernel '{}': {}", kernel.name, e.message()), e.where());
    }
    entries.insert(launch.entry);
  }
  // 2. Libdevice.
  if (UseLibdevice(*module)) LinkLibdevice(*module);
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  llvm::internalizeModule(*module, [&](const llvm::GlobalValue& value) {
    return entries.count(value.getName().str()) > 0;
  });
  // 3. Code.
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(*module, &problem_stream)) {
    throw Error(fmt::format("kernel '{}': invalid NVPTX module (a code generator bug): {}",
                            kernel.name, problems));
  }
  OptimizeModule(*module, *machine, options.opt_level);
  for (llvm::Function& f : *module) {
    if (f.isDeclaration() && !f.isIntrinsic() && !f.use_empty()) {
      throw Error(fmt::format("kernel '{}': '{}' has no GPU implementation", kernel.name,
                              f.getName().str()));
    }
  }
  program.ptx = EmitMachineCode(*module, *machine, /*assembly=*/true);
  return program;
}

}  // namespace tandem::backends
