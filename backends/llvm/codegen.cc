#include "backends/llvm/codegen.h"

#include <fmt/format.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <fstream>
#include <optional>
#include <set>

#include "backends/llvm/codegen_internal.h"
#include "backends/llvm/jit.h"
#include "backends/llvm/kernel_object_cache.h"
#include "backends/runtime/thread_pool.h"
#include "ir/error.h"
#include "ir/kernel/in_place.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/structural.h"

namespace tandem::backends {

using ir::Error;

namespace codegen {

KernelCodegen::KernelCodegen(llvm::Module& module, const ir::KernelFunction& kernel,
                             const CodegenOptions& options, const FunctionAttributes& attributes,
                             const GpuLaunch* gpu)
    : module_(module),
      context_(module.getContext()),
      builder_(module.getContext()),
      kernel_(kernel),
      options_(options),
      attributes_(attributes),
      gpu_(gpu) {
  llvm::FastMathFlags flags;
  flags.setAllowContract(true);
  if (options.allow_reassociation) flags.setAllowReassoc(true);
  builder_.setFastMathFlags(flags);
}

void KernelCodegen::Generate() {
  if (!kernel_.body) throw Error("kernel has no body");
  std::set<const ir::BufferNode*> params;
  for (const ir::Buffer& buffer : kernel_.params) {
    if (!buffer) throw Error("kernel has a null parameter buffer");
    if (!params.insert(buffer.get()).second) {
      throw Error(fmt::format("buffer '{}' appears twice among the parameters", buffer->name));
    }
    ScalarType(buffer->dtype);  // rejects unsupported dtypes early
  }
  access_counts_ = CountAccesses(kernel_.body);
  for (const ir::InPlacePair& pair : ir::InPlacePairs(kernel_)) {
    may_alias_.insert(kernel_.params[static_cast<size_t>(pair.input)].get());
    may_alias_.insert(kernel_.params[static_cast<size_t>(pair.output)].get());
  }
  std::set<const ir::BufferNode*> written;
  ir::VisitStmtTree(kernel_.body, [&](const ir::Stmt& s) {
    if (const auto* store = ir::As<ir::StoreNode>(s)) written.insert(store->buffer.get());
  });
  if (gpu_) {
    GenerateGpuKernel(written);
    return;
  }

  llvm::PointerType* ptr = llvm::PointerType::getUnqual(context_);
  std::vector<llvm::Type*> param_types(kernel_.params.size(), ptr);
  llvm::Function* impl =
      CreateFunction("__tandem." + kernel_.name + ".impl",
                     llvm::FunctionType::get(builder_.getVoidTy(), param_types, false), true);
  impl->addFnAttr(llvm::Attribute::AlwaysInline);
  for (size_t k = 0; k < kernel_.params.size(); ++k) {
    const ir::Buffer& buffer = kernel_.params[k];
    unsigned arg = static_cast<unsigned>(k);
    if (!may_alias_.count(buffer.get())) impl->addParamAttr(arg, llvm::Attribute::NoAlias);
    impl->addParamAttr(arg, llvm::Attribute::NoCapture);
    impl->addParamAttr(arg, llvm::Attribute::getWithAlignment(context_, llvm::Align(64)));
    int64_t bytes = ir::NumElements(buffer->shape) * ir::SizeOf(buffer->dtype);
    if (bytes > 0) impl->addDereferenceableParamAttr(arg, static_cast<uint64_t>(bytes));
    if (!written.count(buffer.get())) impl->addParamAttr(arg, llvm::Attribute::ReadOnly);
    impl->getArg(arg)->setName(buffer->name);
  }

  // The exported entry: unpacks the buffer array.
  llvm::Function* entry = CreateFunction(
      kernel_.name, llvm::FunctionType::get(builder_.getVoidTy(), {ptr}, false), false);
  entry->getArg(0)->setName("buffers");
  {
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context_, "entry", entry));
    std::vector<llvm::Value*> args;
    for (size_t k = 0; k < kernel_.params.size(); ++k) {
      llvm::Value* slot = b.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), k);
      args.push_back(b.CreateAlignedLoad(ptr, slot, llvm::Align(8), kernel_.params[k]->name));
    }
    b.CreateCall(impl, args);
    b.CreateRetVoid();
  }

  function_ = impl;
  entry_block_ = llvm::BasicBlock::Create(context_, "entry", impl);
  auto* start = llvm::BasicBlock::Create(context_, "start", impl);
  llvm::BranchInst::Create(start, entry_block_);
  builder_.SetInsertPoint(start);
  for (size_t k = 0; k < kernel_.params.size(); ++k) {
    buffers_[kernel_.params[k].get()] = impl->getArg(static_cast<unsigned>(k));
  }
  Emit(kernel_.body);
  builder_.CreateRetVoid();
  SetVectorWidthAttributes();
}

}  // namespace codegen

namespace {

struct BuiltModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;
  TargetSpec target;
};

void CheckOptions(const CodegenOptions& options) {
  if (options.opt_level < 0 || options.opt_level > 3) {
    throw Error(fmt::format("codegen: opt_level must be in [0, 3] but is {}", options.opt_level));
  }
  int width = options.prefer_vector_width;
  if (width != 0 && width != 128 && width != 256 && width != 512) {
    throw Error(
        fmt::format("codegen: prefer_vector_width must be 0, 128, 256 or 512 but is {}", width));
  }
}

// Generates, verifies and optimizes the module of `kernels`.
BuiltModule BuildModule(const std::vector<ir::KernelFunction>& kernels,
                        const CodegenOptions& options) {
  CheckOptions(options);
  BuiltModule built;
  built.target = ResolveTarget(options);
  built.machine = CreateTargetMachine(built.target, options.opt_level);
  built.context = std::make_unique<llvm::LLVMContext>();
  built.module = std::make_unique<llvm::Module>("tandem", *built.context);
  built.module->setTargetTriple(built.target.triple);
  built.module->setDataLayout(built.machine->createDataLayout());
  codegen::FunctionAttributes attributes{built.target.cpu, built.target.features,
                                         options.prefer_vector_width};
  std::set<std::string> names;
  for (const ir::KernelFunction& kernel : kernels) {
    if (kernel.name.empty()) throw Error("codegen: a kernel function has an empty name");
    if (!names.insert(kernel.name).second) {
      throw Error(fmt::format("codegen: two kernel functions are named '{}'", kernel.name));
    }
    try {
      ir::KernelFunction compacted =
          codegen::CompactLocalBuffers(VersionInteriorTiles(RelaxLocalPredicates(kernel)));
      codegen::KernelCodegen(*built.module, compacted, options, attributes).Generate();
    } catch (const Error& e) {
      throw Error(fmt::format("kernel '{}': {}", kernel.name, e.message()), e.where());
    }
  }
  if (options.verify) {
    std::string message;
    llvm::raw_string_ostream stream(message);
    if (llvm::verifyModule(*built.module, &stream)) {
      throw Error("codegen: LLVM rejected the generated module (a code generator bug): " +
                  stream.str());
    }
  }
  OptimizeModule(*built.module, *built.machine, options.opt_level);
  return built;
}

}  // namespace

CompiledModule::CompiledModule(std::unique_ptr<JitEngine> engine,
                               std::vector<ir::KernelFunction> kernels,
                               const std::map<std::string, std::string>& symbols)
    : engine_(std::move(engine)) {
  for (ir::KernelFunction& kernel : kernels) {
    std::string name = kernel.name;
    auto symbol = symbols.find(name);
    entries_[name] = reinterpret_cast<KernelEntry>(
        engine_->Lookup(symbol == symbols.end() ? name : symbol->second));
    kernels_.emplace(name, std::move(kernel));
  }
}

CompiledModule::~CompiledModule() = default;

const ir::KernelFunction& CompiledModule::Kernel(const std::string& kernel_name) const {
  auto it = kernels_.find(kernel_name);
  if (it == kernels_.end()) {
    throw Error(fmt::format("compiled module has no kernel named '{}'", kernel_name));
  }
  return it->second;
}

CompiledModule::KernelEntry CompiledModule::Lookup(const std::string& kernel_name) const {
  Kernel(kernel_name);
  return entries_.at(kernel_name);
}

std::vector<std::string> CompiledModule::kernel_names() const {
  std::vector<std::string> names;
  for (const auto& [name, kernel] : kernels_) names.push_back(name);
  return names;
}

void CompiledModule::Run(const std::string& kernel_name,
                         const std::vector<ir::Tensor>& args) const {
  const ir::KernelFunction& kernel = Kernel(kernel_name);
  if (args.size() != kernel.params.size()) {
    throw Error(fmt::format("kernel '{}' takes {} buffers but {} tensors were given", kernel_name,
                            kernel.params.size(), args.size()));
  }
  std::vector<void*> pointers;
  size_t first_output =
      kernel.params.size() -
      std::min<size_t>(kernel.params.size(), static_cast<size_t>(kernel.num_outputs));
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Buffer& b = kernel.params[i];
    if (args[i].shape() != b->shape || args[i].dtype() != b->dtype) {
      throw Error(fmt::format("kernel '{}': argument {} is {} but buffer '{}' is {}{}", kernel_name,
                              i, ir::ToString(args[i].type()), b->name, ir::ToString(b->dtype),
                              ir::ShapeToString(b->shape)));
    }
    void* data = const_cast<void*>(args[i].raw_data());
    if (args[i].num_bytes() > 0 &&
        (data == nullptr || reinterpret_cast<uintptr_t>(data) % 64 != 0)) {
      throw Error(fmt::format("kernel '{}': argument {} is not 64-byte aligned", kernel_name, i));
    }
    pointers.push_back(data);
  }
  // Written buffers are noalias: they must not share storage with any other argument, except
  // an output computed in place of its input (ir::InPlacePairs), in exactly the same bytes. (The
  // pairs are looked up only when storage is shared, and once: this runs on every call.)
  std::optional<std::vector<ir::InPlacePair>> pairs;
  auto in_place = [&](size_t input, size_t output) {
    if (!pairs) pairs = ir::InPlacePairs(kernel);
    return std::find(pairs->begin(), pairs->end(),
                     ir::InPlacePair{static_cast<int>(input), static_cast<int>(output)}) !=
           pairs->end();
  };
  for (size_t i = first_output; i < args.size(); ++i) {
    auto begin_i = reinterpret_cast<uintptr_t>(pointers[i]);
    uintptr_t end_i = begin_i + static_cast<uintptr_t>(args[i].num_bytes());
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i || args[i].num_bytes() == 0 || args[j].num_bytes() == 0) continue;
      if (pointers[i] == pointers[j] && in_place(j, i)) continue;
      auto begin_j = reinterpret_cast<uintptr_t>(pointers[j]);
      uintptr_t end_j = begin_j + static_cast<uintptr_t>(args[j].num_bytes());
      if (begin_i < end_j && begin_j < end_i) {
        throw Error(fmt::format("kernel '{}': output argument {} shares storage with argument {}",
                                kernel_name, i, j));
      }
    }
  }
  entries_.at(kernel_name)(pointers.data());
  if (std::exception_ptr error = TakeParallelForError()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      throw Error(fmt::format("kernel '{}' failed: {}", kernel_name, e.what()));
    }
  }
}

std::vector<ir::Tensor> CompiledModule::Run(const std::string& kernel_name,
                                            const std::vector<ir::Tensor>& inputs,
                                            bool allocate_outputs) const {
  const ir::KernelFunction& kernel = Kernel(kernel_name);
  std::vector<ir::Tensor> args = inputs;
  std::vector<ir::Tensor> outputs;
  if (allocate_outputs) {
    size_t count = std::min<size_t>(kernel.params.size(),
                                    static_cast<size_t>(std::max(kernel.num_outputs, 0)));
    for (size_t i = kernel.params.size() - count; i < kernel.params.size(); ++i) {
      outputs.emplace_back(kernel.params[i]->shape, kernel.params[i]->dtype);
      args.push_back(outputs.back());
    }
  }
  Run(kernel_name, args);
  return outputs;
}

namespace {

// A hash of everything besides the kernel that the object code depends on.
uint64_t SettingsHash(const CodegenOptions& options, const TargetSpec& target) {
  ir::StableHasher settings;
  for (const std::string& part : {target.triple, target.cpu, target.features}) {
    settings.UpdateString(part);
  }
  settings.UpdateU64(static_cast<uint64_t>(options.prefer_vector_width));
  settings.UpdateU64(static_cast<uint64_t>(options.opt_level));
  settings.UpdateU64(options.allow_reassociation ? 1 : 0);
  return settings.Digest();
}

// The kernel renamed to the symbol its code is compiled and cached under: a name derived from
// its structure and the settings, so that one object serves every kernel of that structure,
// whatever each module names it.
ir::KernelFunction RenamedForCache(const ir::KernelFunction& kernel, uint64_t settings_hash) {
  ir::KernelFunction renamed = kernel;
  renamed.name = "";
  ir::StableHasher key;
  key.UpdateU64(ir::StructuralHash(renamed));
  key.UpdateU64(settings_hash);
  renamed.name = fmt::format("tandem_kernel_{:016x}", key.Digest());
  return renamed;
}

// CompileKernelObjects for checked `options` that resolve to `target`, also giving each
// kernel's symbol (by the kernel's name).
std::vector<KernelObject> CompileObjects(const std::vector<ir::KernelFunction>& kernels,
                                         const CodegenOptions& options, const TargetSpec& target,
                                         std::map<std::string, std::string>& symbols) {
  uint64_t settings_hash = SettingsHash(options, target);
  std::vector<KernelObject> objects;
  std::set<std::string> added;
  for (const ir::KernelFunction& kernel : kernels) {
    if (kernel.name.empty()) throw Error("codegen: a kernel function has an empty name");
    if (symbols.count(kernel.name)) {
      throw Error(fmt::format("codegen: two kernel functions are named '{}'", kernel.name));
    }
    ir::KernelFunction renamed = RenamedForCache(kernel, settings_hash);
    symbols[kernel.name] = renamed.name;
    if (!added.insert(renamed.name).second) continue;
    KernelObjectCache& cache = KernelObjectCache::Global();
    std::shared_ptr<const std::string> object = cache.Find(renamed.name);
    if (!object) {
      try {
        BuiltModule built = BuildModule({renamed}, options);
        object = std::make_shared<const std::string>(
            EmitMachineCode(*built.module, *built.machine, /*assembly=*/false));
      } catch (const Error& e) {
        // Errors name the kernel as the caller knows it.
        std::string message = e.message();
        for (size_t at = message.find(renamed.name); at != std::string::npos;
             at = message.find(renamed.name, at + kernel.name.size())) {
          message.replace(at, renamed.name.size(), kernel.name);
        }
        throw Error(message, e.where());
      }
      cache.Insert(renamed.name, object);
    }
    objects.push_back({renamed.name, std::move(object)});
  }
  return objects;
}

}  // namespace

std::vector<KernelObject> CompileKernelObjects(const std::vector<ir::KernelFunction>& kernels,
                                               const CodegenOptions& options) {
  CheckOptions(options);
  std::map<std::string, std::string> symbols;
  return CompileObjects(kernels, options, ResolveTarget(options), symbols);
}

bool KernelObjectsCached(const std::vector<ir::KernelFunction>& kernels,
                         const CodegenOptions& options) {
  CheckOptions(options);
  uint64_t settings_hash = SettingsHash(options, ResolveTarget(options));
  KernelObjectCache& cache = KernelObjectCache::Global();
  return std::all_of(kernels.begin(), kernels.end(), [&](const ir::KernelFunction& kernel) {
    return cache.Contains(RenamedForCache(kernel, settings_hash).name);
  });
}

std::unique_ptr<CompiledModule> CompileKernels(const std::vector<ir::KernelFunction>& kernels,
                                               const CodegenOptions& options) {
  CheckOptions(options);
  TargetSpec target = ResolveTarget(options);
  std::map<std::string, std::string> symbols;  // kernel name -> symbol of its code
  std::vector<KernelObject> objects = CompileObjects(kernels, options, target, symbols);
  std::unique_ptr<JitEngine> engine = JitEngine::Create(target, options.opt_level);
  for (const KernelObject& object : objects) engine->AddObject(*object.object);
  return std::make_unique<CompiledModule>(std::move(engine), kernels, symbols);
}

std::string EmitLlvmIr(const std::vector<ir::KernelFunction>& kernels,
                       const CodegenOptions& options) {
  BuiltModule built = BuildModule(kernels, options);
  std::string text;
  llvm::raw_string_ostream stream(text);
  built.module->print(stream, nullptr);
  return stream.str();
}

std::string EmitAssembly(const std::vector<ir::KernelFunction>& kernels,
                         const CodegenOptions& options) {
  BuiltModule built = BuildModule(kernels, options);
  return EmitMachineCode(*built.module, *built.machine, /*assembly=*/true);
}

void EmitObjectFile(const std::vector<ir::KernelFunction>& kernels, const std::string& path,
                    const CodegenOptions& options) {
  BuiltModule built = BuildModule(kernels, options);
  std::string object = EmitMachineCode(*built.module, *built.machine, /*assembly=*/false);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw Error(fmt::format("cannot open '{}' for writing", path));
  file.write(object.data(), static_cast<std::streamsize>(object.size()));
  if (!file) throw Error(fmt::format("cannot write the object file '{}'", path));
}

std::string DescribeTarget(const CodegenOptions& options) {
  TargetSpec target = ResolveTarget(options);
  return fmt::format("{} cpu={} features={}", target.triple, target.cpu, target.features);
}

}  // namespace tandem::backends
