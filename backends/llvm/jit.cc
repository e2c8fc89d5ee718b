#include "backends/llvm/jit.h"
#include "backends/target/resolved_target.h"

#include <fmt/format.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCSchedule.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "backends/runtime/thread_pool.h"
#include "ir/error.h"

namespace tandem::backends {

using ir::Error;

namespace {

std::vector<std::string> SplitFeatures(const std::string& features) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= features.size()) {
    size_t comma = features.find(',', start);
    if (comma == std::string::npos) comma = features.size();
    std::string item = features.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

const llvm::Target* LookupTarget(const std::string& triple) {
  std::string message;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, message);
  if (!target) throw Error(fmt::format("no LLVM target for '{}': {}", triple, message));
  return target;
}

// True when LLVM knows `name` as a subtarget feature: enabling and disabling it from the
// baseline CPU give different feature sets.
bool IsKnownFeature(const llvm::Target* target, const std::string& triple,
                    const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(triple + "|" + name);
  if (found != known.end()) return found->second;
  std::unique_ptr<llvm::MCSubtargetInfo> on(
      target->createMCSubtargetInfo(triple, "generic", "+" + name));
  std::unique_ptr<llvm::MCSubtargetInfo> off(
      target->createMCSubtargetInfo(triple, "generic", "-" + name));
  bool is_known = on && off && on->getFeatureBits() != off->getFeatureBits();
  known.emplace(triple + "|" + name, is_known);
  return is_known;
}

// Error unless LLVM knows spec.cpu for spec.triple.
void CheckCpu(const llvm::Target* target, const TargetSpec& spec) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(spec.triple, spec.cpu, ""));
  if (!info || !info->isCPUStringValid(spec.cpu)) {
    throw Error(fmt::format("unknown CPU '{}' for target {}", spec.cpu, spec.triple));
  }
}

llvm::CodeGenOpt::Level CodegenLevel(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOpt::None;
    case 1:
      return llvm::CodeGenOpt::Less;
    case 2:
      return llvm::CodeGenOpt::Default;
    default:
      return llvm::CodeGenOpt::Aggressive;
  }
}

llvm::TargetOptions MakeTargetOptions() {
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;  // fmuladd / contract may fuse into fma
  return options;
}

std::string ToString(llvm::Error error) {
  return llvm::toString(std::move(error));
}

}  // namespace

void InitializeLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::vector<std::string> EnabledTargetFeatures(const CodegenOptions& options,
                                               const std::vector<std::string>& features) {
  TargetSpec spec = ResolveTarget(options);
  const llvm::Target* target = LookupTarget(spec.triple);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(spec.triple, spec.cpu, spec.features));
  if (!info) throw Error(fmt::format("no subtarget information for {}", spec.cpu));
  std::vector<std::string> enabled;
  for (const std::string& feature : features) {
    if (info->checkFeatures("+" + feature)) enabled.push_back(feature);
  }
  return enabled;
}

TargetSpec ResolveTarget(const CodegenOptions& options) {
  InitializeLlvm();
  TargetSpec spec;
  spec.triple = llvm::sys::getProcessTriple();
  const llvm::Target* target = LookupTarget(spec.triple);
  std::vector<std::string> features;
  if (options.cpu == "host" || options.cpu.empty()) {
    // The host's features come from LLVM itself (or from the build's TANDEM_HOST_TARGET, whose
    // CPU is checked like any other).
    const HostCpu& host = GetHostCpu();
    spec.cpu = host.name;
    if (host.configured) CheckCpu(target, spec);
    for (const std::string& feature : SplitFeatures(host.features)) features.push_back(feature);
  } else {
    spec.cpu = options.cpu;
    CheckCpu(target, spec);
  }
  for (const std::string& feature : SplitFeatures(options.features)) {
    if (feature.size() < 2 || (feature[0] != '+' && feature[0] != '-') ||
        !IsKnownFeature(target, spec.triple, feature.substr(1))) {
      throw Error(
          fmt::format("unknown target feature '{}' (expected +name or -name of a {} "
                      "feature)",
                      feature, spec.triple));
    }
    features.push_back(feature);
  }
  for (size_t k = 0; k < features.size(); ++k) spec.features += (k ? "," : "") + features[k];
  return spec;
}

std::unique_ptr<llvm::TargetMachine> CreateTargetMachine(const TargetSpec& spec, int opt_level) {
  InitializeLlvm();
  const llvm::Target* target = LookupTarget(spec.triple);
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(spec.triple, spec.cpu, spec.features, MakeTargetOptions(),
                                  llvm::Reloc::PIC_, std::nullopt, CodegenLevel(opt_level)));
  if (!machine) throw Error(fmt::format("cannot create a target machine for {}", spec.triple));
  return machine;
}

void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine, int opt_level) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder builder(&machine, tuning);
  llvm::TargetLibraryInfoImpl library(machine.getTargetTriple());
  functions.registerPass([&] { return llvm::TargetLibraryAnalysis(library); });
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::ModulePassManager passes;
  switch (opt_level) {
    case 0:
      passes = builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
      break;
    case 1:
      passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1);
      break;
    case 2:
      passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
      break;
    default:
      passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
      break;
  }
  passes.run(module, modules);
}

std::string EmitMachineCode(llvm::Module& module, llvm::TargetMachine& machine, bool assembly) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, stream, nullptr,
                                  assembly ? llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile)) {
    throw Error(fmt::format("target {} cannot emit {}", machine.getTargetTriple().str(),
                            assembly ? "assembly" : "object files"));
  }
  passes.run(module);
  return std::string(buffer.begin(), buffer.end());
}

JitEngine::~JitEngine() = default;

std::unique_ptr<JitEngine> JitEngine::Create(const TargetSpec& spec, int opt_level) {
  InitializeLlvm();
  llvm::orc::JITTargetMachineBuilder machine{llvm::Triple(spec.triple)};
  machine.setCPU(spec.cpu);
  machine.addFeatures(SplitFeatures(spec.features));
  machine.setCodeGenOptLevel(CodegenLevel(opt_level));
  machine.setOptions(MakeTargetOptions());
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machine)).create();
  if (!jit) throw Error("cannot create the LLVM JIT: " + ToString(jit.takeError()));
  std::unique_ptr<JitEngine> engine(new JitEngine());
  engine->jit_ = std::move(*jit);
  llvm::orc::LLJIT& lljit = *engine->jit_;
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      lljit.getDataLayout().getGlobalPrefix());
  if (!process)
    throw Error("cannot search the process for symbols: " + ToString(process.takeError()));
  lljit.getMainJITDylib().addGenerator(std::move(*process));
  llvm::orc::SymbolMap runtime;
  auto define = [&](const char* name, void* address) {
    runtime[lljit.mangleAndIntern(name)] =
        llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address),
                                 llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  };
  define("tandem_parallel_for", reinterpret_cast<void*>(&tandem_parallel_for));
  define("tandem_index_error", reinterpret_cast<void*>(&tandem_index_error));
  define("aligned_alloc", reinterpret_cast<void*>(&std::aligned_alloc));
  define("free", reinterpret_cast<void*>(&std::free));
  if (llvm::Error error = lljit.getMainJITDylib().define(llvm::orc::absoluteSymbols(runtime))) {
    throw Error("cannot define the runtime symbols: " + ToString(std::move(error)));
  }
  return engine;
}

void JitEngine::AddObject(const std::string& object) {
  if (llvm::Error error = jit_->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object))) {
    throw Error("cannot add an object file to the JIT: " + ToString(std::move(error)));
  }
}

void* JitEngine::Lookup(const std::string& name) {
  auto address = jit_->lookup(name);
  if (!address) {
    throw Error(fmt::format("JIT lookup of '{}' failed: {}", name, ToString(address.takeError())));
  }
  return address->toPtr<void*>();
}

namespace {

// The reciprocal throughput (cycles per instruction) of the instruction named `opcode` in the
// scheduling model of `info`'s CPU; 0 when the model does not say.
double FmaReciprocalThroughput(const llvm::MCSubtargetInfo& info,
                               const llvm::MCInstrInfo& instructions, llvm::StringRef opcode) {
  const llvm::MCSchedModel& model = info.getSchedModel();
  if (!model.hasInstrSchedModel()) return 0;
  for (unsigned op = 0; op < instructions.getNumOpcodes(); ++op) {
    if (instructions.getName(op) != opcode) continue;
    const llvm::MCSchedClassDesc* desc =
        model.getSchedClassDesc(instructions.get(op).getSchedClass());
    if (desc == nullptr || !desc->isValid() || desc->isVariant()) return 0;
    return llvm::MCSchedModel::getReciprocalThroughput(info, *desc);
  }
  return 0;
}

// A number read from a sysfs file ("8", "48K"); 0 when unreadable.
int64_t ReadSysfsSize(const std::string& path) {
  std::ifstream file(path);
  int64_t value = 0;
  std::string unit;
  if (!(file >> value)) return 0;
  file >> unit;
  if (unit == "K") value <<= 10;
  if (unit == "M") value <<= 20;
  return value;
}

// `core` with the host's L1 data and L2 caches (cpu0's in sysfs); a level sysfs does not
// describe is left as it is.
kernels::CpuCoreModel WithHostCaches(kernels::CpuCoreModel core) {
  for (int index = 0; index < 8; ++index) {
    std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream type_file(dir + "type");
    std::string type;
    if (!(type_file >> type)) break;
    int64_t level = ReadSysfsSize(dir + "level");
    int64_t ways = ReadSysfsSize(dir + "ways_of_associativity");
    int64_t bytes = ReadSysfsSize(dir + "size");
    if (ways <= 0 || bytes <= 0) continue;
    if (level == 1 && type == "Data") {
      core.l1_data_ways = static_cast<int>(ways);
      core.l1_data_bytes = bytes;
    } else if (level == 2 && (type == "Unified" || type == "Data")) {
      core.l2_ways = static_cast<int>(ways);
      core.l2_bytes = bytes;
    }
  }
  return core;
}

}  // namespace

VectorUnit TargetVectorUnit(const std::string& cpu, const std::string& features) {
  static std::mutex mutex;
  static std::map<std::string, VectorUnit> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(cpu + "|" + features);
  if (it != cache.end()) return it->second;
  CodegenOptions options;
  options.cpu = cpu;
  options.features = features;
  TargetSpec spec = ResolveTarget(options);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      LookupTarget(spec.triple)->createMCSubtargetInfo(spec.triple, spec.cpu, spec.features));
  VectorUnit unit{4, 16};
  if (info && info->checkFeatures("+avx512f")) {
    unit = {16, 32};
  } else if (info && info->checkFeatures("+avx")) {
    unit = {8, 16};
  }
  if (info && unit.f32_lanes >= 8) {
    std::unique_ptr<llvm::MCInstrInfo> instructions(LookupTarget(spec.triple)->createMCInstrInfo());
    double widest = FmaReciprocalThroughput(
        *info, *instructions, unit.f32_lanes >= 16 ? "VFMADD231PSZr" : "VFMADD231PSYr");
    double ymm = FmaReciprocalThroughput(*info, *instructions, "VFMADD231PSYr");
    if (widest > 0 && ymm > 0) unit.core.fma_per_cycle = std::clamp(2 * ymm / widest, 1.0, 2.0);
  }
  if (cpu == "host" || cpu.empty()) unit.core = WithHostCaches(unit.core);
  return cache.emplace(cpu + "|" + features, unit).first->second;
}

kernels::DefaultScheduleOptions DefaultScheduleOptionsFor(const ir::Target& target) {
  kernels::DefaultScheduleOptions options;
  VectorUnit unit = TargetVectorUnit(target.cpu, target.features);
  options.vector_lanes = target.vector_bits > 0 ? target.vector_bits / 32 : unit.f32_lanes;
  options.vector_registers = unit.registers;
  options.core = unit.CoreAt(options.vector_lanes);
  options.num_threads = target.num_threads;
  return options;
}

}  // namespace tandem::backends
