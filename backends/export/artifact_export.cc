#include "backends/export/artifact_export.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/llvm/codegen.h"
#include "backends/llvm/jit.h"
#include "backends/onednn/onednn_isa.h"
#include "backends/runtime/artifact.h"
#include "backends/runtime/cpu_features.h"
#include "backends/runtime/execution_plan.h"
#include "ir/error.h"
#include "ir/printer.h"

extern char** environ;

namespace tandem::backends {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKernelSymbolPrefix = "tandem_kernel_";

// A temporary directory removed when this goes out of scope.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (fs::temp_directory_path() / "tandem-export-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw ir::Error("export: cannot create a temporary directory");
    }
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw ir::Error(fmt::format("export: cannot write '{}'", path.string()));
}

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

// The C compiler driver that links the library: the first of cc, gcc, clang on PATH.
std::string FindCompilerDriver() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"cc", "gcc", "clang"}) {
    size_t begin = 0;
    while (begin <= dirs.size()) {
      size_t end = dirs.find(':', begin);
      if (end == std::string::npos) end = dirs.size();
      fs::path candidate = fs::path(dirs.substr(begin, end - begin)) / name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
      begin = end + 1;
    }
  }
  throw ir::Error(
      "export: no C compiler driver (cc, gcc or clang) on PATH to link the shared library; "
      "install one (Debian: gcc)");
}

// Runs `argv` with its output in `log`; Error with that output when it fails.
void RunTool(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw ir::Error(fmt::format("export: cannot run {}", argv[0]));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw ir::Error(
        fmt::format("export: linking failed ({}):\n{}", fmt::join(argv, " "), ReadFile(log)));
  }
}

ArtifactTensor TensorOf(const std::string& name, const ir::TensorType& type) {
  return ArtifactTensor{name, ir::ToString(type.dtype), type.shape};
}

// The names of the function's results (the returned values, or the tuple's elements).
std::vector<std::string> OutputNames(const ir::GraphFunction& fn) {
  const ir::Node& output = fn.node(fn.output);
  if (output.kind != ir::NodeKind::kTuple) return {output.name};
  std::vector<std::string> names;
  for (ir::ValueId id : output.inputs) names.push_back(fn.node(id).name);
  return names;
}

// The assembler source of the payload: for a shared library, its two symbols; for an object, the
// linked-model table (payload, size, kernels by symbol) under tandem_artifact_<name>.
std::string PayloadAssembly(const std::string& payload_file, const ExportOptions& options,
                            const std::vector<std::string>& kernel_symbols) {
  if (!options.object) {
    return fmt::format(
        "  .section .rodata.tandem_artifact,\"a\",@progbits\n"
        "  .globl {0}\n  .type {0}, @object\n  .p2align 6\n{0}:\n"
        "  .incbin \"{2}\"\n{0}_end:\n  .size {0}, .-{0}\n"
        "  .globl {1}\n  .type {1}, @object\n  .p2align 3\n{1}:\n"
        "  .quad {0}_end - {0}\n  .size {1}, 8\n"
        "  .section .note.GNU-stack,\"\",@progbits\n",
        kArtifactPayloadSymbol, kArtifactPayloadSizeSymbol, payload_file);
  }
  std::string table = fmt::format(
      "  .section .rodata.tandem_artifact_{0},\"a\",@progbits\n  .p2align 6\n.Lpayload:\n"
      "  .incbin \"{1}\"\n.Lpayload_end:\n",
      options.linked_name, payload_file);
  for (size_t k = 0; k < kernel_symbols.size(); ++k) {
    table += fmt::format(".Lsymbol{}:\n  .asciz \"{}\"\n", k, kernel_symbols[k]);
  }
  table += fmt::format(
      "  .section .data.rel.ro.tandem_artifact_{},\"aw\",@progbits\n  .p2align 3\n"
      ".Lkernels:\n",
      options.linked_name);
  for (size_t k = 0; k < kernel_symbols.size(); ++k) {
    table += fmt::format("  .quad .Lsymbol{}\n  .quad {}\n", k, kernel_symbols[k]);
  }
  table += fmt::format(
      "  .globl tandem_artifact_{0}\n  .type tandem_artifact_{0}, @object\n"
      "tandem_artifact_{0}:\n  .quad .Lpayload\n  .quad .Lpayload_end - .Lpayload\n"
      "  .quad {1}\n  .quad .Lkernels\n  .size tandem_artifact_{0}, 32\n"
      "  .section .note.GNU-stack,\"\",@progbits\n",
      options.linked_name, kernel_symbols.size());
  return table;
}

bool IsCIdentifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

ExportSummary ExportArtifact(const ir::IRModule& module, const BuildOptions& options,
                             const ExportOptions& export_options) {
  if (export_options.object && !IsCIdentifier(export_options.linked_name)) {
    throw ir::Error(fmt::format("export: the linked model's name '{}' is not a C identifier",
                                export_options.linked_name));
  }
  const std::string kernel_prefix =
      export_options.object ? fmt::format("tandem_kernel_{}_", export_options.linked_name)
                            : std::string(kKernelSymbolPrefix);
  // 1. Legalized and planned as Build does.
  ir::IRModule legalized = LegalizeForBuild(module, options);
  const ir::GraphFunction& fn = legalized.Get(options.function);
  ExecutionPlan plan = PlanExecution(fn, kArtifactAlignment, &legalized);
  CodegenOptions codegen = CodegenOptionsFor(legalized, options.codegen);

  Artifact artifact;
  ArtifactManifest& manifest = artifact.manifest;
  manifest.tandem_version = TANDEM_VERSION;
  manifest.codegen_version = kCodegenVersion;
  manifest.target = export_options.target;
  manifest.required_features = EnabledTargetFeatures(codegen, CheckableCpuFeatures());
  manifest.pipeline = export_options.pipeline;
  manifest.trace_hash = export_options.trace_hash;
  manifest.model_hash = export_options.model_hash;
  manifest.threads = export_options.threads;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    artifact.inputs.push_back(TensorOf(fn.node(fn.params[i]).name, plan.input_types.at(i)));
  }
  std::vector<std::string> output_names = OutputNames(fn);
  for (size_t o = 0; o < plan.output_types.size(); ++o) {
    std::string name = o < output_names.size() ? output_names[o] : fmt::format("output_{}", o);
    artifact.outputs.push_back(TensorOf(name, plan.output_types[o]));
  }
  std::vector<const void*> constants;
  ExportSummary summary;
  for (const ExecutionPlan::Slot& slot : plan.slots) {
    ArtifactSlot s;
    s.bytes = slot.bytes;
    s.index = slot.index;
    switch (slot.kind) {
      case ExecutionPlan::SlotKind::kInput:
        s.kind = ArtifactSlot::Kind::kInput;
        break;
      case ExecutionPlan::SlotKind::kOutput:
        s.kind = ArtifactSlot::Kind::kOutput;
        break;
      case ExecutionPlan::SlotKind::kArena:
        s.kind = ArtifactSlot::Kind::kArena;
        break;
      case ExecutionPlan::SlotKind::kConstant:
        s.kind = ArtifactSlot::Kind::kConstant;
        s.bytes = slot.constant.num_bytes();
        constants.push_back(slot.constant.raw_data());
        summary.constant_bytes += s.bytes;
        break;
    }
    artifact.slots.push_back(s);
  }
  std::vector<std::string> call_data;
  for (const ExecutionPlan::Call& call : plan.calls) {
    const ir::Node& node = fn.node(call.node);
    ArtifactCall exported;
    exported.kernel = node.callee;
    exported.args = call.args;
    call_data.emplace_back();
    if (node.kind == ir::NodeKind::kCallKernel) {
      exported.symbol = kernel_prefix + node.callee;
      artifact.calls.push_back(std::move(exported));
      continue;
    }
    // A subgraph on an external backend: its module text, compiled again when the artifact loads.
    const ir::GraphFunction& subgraph = legalized.Get(node.callee);
    exported.backend = subgraph.ExternBackend();
    if (exported.backend != "onednn") {
      throw ir::Error(
          fmt::format("export: %{} is placed on the {} backend, which exported models cannot "
                      "call (they run their own kernels and oneDNN)",
                      node.name, exported.backend),
          ir::ErrorLocation{.op = node.op, .node = node.name});
    }
    ir::IRModule holder;
    holder.Add(subgraph);
    ir::PrintOptions full;
    full.max_constant_bytes = -1;
    call_data.back() = ir::PrintModule(holder, full);
    manifest.onednn_isa =
        OnednnIsaFor(ir::Target{.cpu = codegen.cpu, .features = codegen.features});
    manifest.onednn_version = ExternalBackendRegistry::Global().Get("onednn").version();
    artifact.calls.push_back(std::move(exported));
  }
  for (const ExecutionPlan::OutputCopy& copy : plan.output_copies) {
    artifact.output_copies.emplace_back(copy.slot, copy.output);
  }
  artifact.arena_bytes = plan.arena_bytes;
  summary.kernel_calls = static_cast<int64_t>(artifact.calls.size());
  summary.required_features = fmt::format("{}", fmt::join(manifest.required_features, ","));

  // 2. The kernels' machine code.
  TemporaryDirectory work;
  std::vector<ir::KernelFunction> kernels;
  for (const auto& [name, kernel] : legalized.kernel_functions()) {
    ir::KernelFunction renamed = *kernel;
    renamed.name = kernel_prefix + name;
    kernels.push_back(std::move(renamed));
  }
  summary.kernels = static_cast<int64_t>(kernels.size());
  fs::path kernels_object = work.path() / "kernels.o";
  EmitObjectFile(kernels, kernels_object.string(), codegen);

  // 3. The payload, included by an assembler source.
  WriteFile(work.path() / "payload.bin", EncodeArtifactPayload(artifact, constants, call_data));
  std::vector<std::string> kernel_symbols;
  for (const ir::KernelFunction& kernel : kernels) kernel_symbols.push_back(kernel.name);
  WriteFile(work.path() / "payload.s", PayloadAssembly((work.path() / "payload.bin").string(),
                                                       export_options, kernel_symbols));

  // 4. Linked, then the trailer (a shared library) or as is (an object).
  std::string driver = FindCompilerDriver();
  fs::path linked = work.path() / (export_options.object ? "model.o" : "model.so");
  if (export_options.object) {
    RunTool({driver, "-c", "-o", (work.path() / "payload.o").string(),
             (work.path() / "payload.s").string()},
            work.path() / "assemble.log");
    RunTool({driver, "-r", "-nostdlib", "-o", linked.string(), kernels_object.string(),
             (work.path() / "payload.o").string()},
            work.path() / "link.log");
  } else {
    RunTool({driver, "-shared", "-o", linked.string(), kernels_object.string(),
             (work.path() / "payload.s").string(), "-lm", "-Wl,-z,noexecstack"},
            work.path() / "link.log");
  }
  std::string bytes = ReadFile(linked);
  if (!export_options.object) {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    bytes += ArtifactTrailer(bytes.size(), ArtifactChecksum(data, bytes.size()));
  }
  WriteFile(export_options.path, bytes);
  summary.file_bytes = static_cast<int64_t>(bytes.size());
  return summary;
}

}  // namespace tandem::backends
