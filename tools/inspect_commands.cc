// `tandem show`, `tandem pipelines` and `tandem compile`: look at a model, at the registered
// pipelines, and at what a pipeline makes of a model.
#include <fmt/format.h>

#include <fmt/ranges.h>
#include <algorithm>

#include <iostream>

#include "backends/cuda/ptxas.h"
#include "backends/llvm/codegen.h"
#include "backends/llvm/nvptx_codegen.h"
#include "backends/runtime/executable.h"
#include "backends/target/resolved_target.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "passes/pass_docs.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"
#include "tools/op_catalog.h"

namespace tandem::tools {

Command AddShowCommand(CLI::App& app) {
  auto model = std::make_shared<ModelOptions>();
  auto full = std::make_shared<bool>(false);
  CLI::App* show = app.add_subcommand("show", "print the graph IR of a model");
  AddModelOptions(show, *model);
  show->add_flag("--full-constants", *full,
                 "print every constant's data (the text then parses back exactly)");
  return [show, model, full]() {
    if (!*show) return -1;
    ir::PrintOptions options;
    options.max_constant_bytes = *full ? -1 : 64;
    std::cout << ir::PrintModule(LoadModel(*model), options);
    return 0;
  };
}

Command AddPipelinesCommand(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>();
  auto target = std::make_shared<std::string>("llvm");
  auto list_passes = std::make_shared<bool>(false);
  auto passes_markdown = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "pipelines", "list the registered pipelines, or show one's structure, or list the passes");
  cmd->add_option("name", *name, "pipeline to show");
  cmd->add_option("--pipeline-file", *file, "also register the pipelines of this file");
  cmd->add_option("--target", *target, "target whose variant to show")->capture_default_str();
  cmd->add_flag("--passes", *list_passes,
                "list every registered pass with its summary, required passes and arguments");
  cmd->add_flag("--passes-markdown", *passes_markdown,
                "print the pass reference as Markdown (docs/passes.md)");
  return [cmd, name, file, target, list_passes, passes_markdown]() {
    if (!*cmd) return -1;
    if (*passes_markdown) {
      std::cout << passes::PassRegistryMarkdown(passes::PassRegistry::Global());
      return 0;
    }
    if (*list_passes) {
      std::cout << passes::PassRegistryText(passes::PassRegistry::Global());
      return 0;
    }
    auto& registry = pipelines::PipelineRegistry::Global();
    if (!file->empty()) registry.LoadFile(*file);
    if (name->empty()) {
      for (const auto& def : registry.List()) {
        std::string label = def.name + (def.target_kind.empty() ? "" : "@" + def.target_kind);
        fmt::print("{:<24} {}\n", label, def.description);
      }
      return 0;
    }
    ir::Target t = ir::ParseTarget(*target);
    const auto& def = registry.Get(*name, t);
    auto pipeline = registry.Create(*name, t);
    fmt::print("{}{}: {}\n\npipeline text:\n  {}\n\nstructure:\n{}", def.name,
               def.target_kind.empty() ? "" : "@" + def.target_kind, def.description,
               passes::PrintPipeline(*pipeline), passes::PrintPipelineTree(*pipeline));
    return 0;
  };
}

namespace {

// Each kernel of `module` (or only `only`) compiled to PTX for target.arch, with ptxas's report
// when this build found ptxas.
void PrintPtx(const ir::IRModule& module, const ir::Target& target, const std::string& only) {
  std::vector<std::string> names;
  bool printed = false;
  for (const auto& [name, function] : module.kernel_functions()) {
    names.push_back(name);
    if (!only.empty() && name != only) continue;
    backends::GpuProgram program = backends::CompileGpuKernel(*function, {target.arch, 3});
    std::string launches;
    for (const backends::GpuLaunchSpec& launch : program.launches) {
      launches += fmt::format("\n//   {} grid ({}) block ({})", launch.entry,
                              fmt::join(launch.grid, ", "), fmt::join(launch.block, ", "));
    }
    std::string report = "(no ptxas in this build)";
    if (!backends::cuda::PtxasPath().empty()) {
      backends::cuda::PtxasReport r = backends::cuda::AssemblePtx(program.ptx, target.arch);
      if (!r.accepted) {
        throw ir::Error(
            fmt::format("ptxas rejected kernel '{}' for {}:\n{}", name, target.arch, r.log));
      }
      report = fmt::format("{} registers, {} bytes spilled, {} bytes shared memory",
                           r.max_registers, r.spill_bytes, r.shared_bytes);
    }
    std::cout << fmt::format("// kernel {} for {}: {}; launches:{}\n", name, target.arch, report,
                             launches)
              << program.ptx << "\n";
    printed = true;
  }
  if (names.empty()) {
    throw ir::Error("the pipeline left no kernel functions (a cuda pipeline ends with Legalize)");
  }
  if (!printed) {
    throw ir::Error(
        fmt::format("no kernel named '{}'; the kernels are: {}", only, fmt::join(names, ", ")));
  }
}

}  // namespace

Command AddCompileCommand(CLI::App& app) {
  auto model = std::make_shared<ModelOptions>();
  auto pipeline = std::make_shared<PipelineOptions>();
  auto full = std::make_shared<bool>(false);
  auto emit = std::make_shared<std::string>("ir");
  auto kernel = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("compile", "run a pipeline on a model and print the optimized IR");
  AddModelOptions(cmd, *model);
  AddPipelineOptions(cmd, *pipeline);
  cmd->add_flag("--full-constants", *full, "print every constant's data");
  cmd->add_option("--emit", *emit,
                  "what to print: ir (the pipeline's output), llvm (the optimized LLVM IR of the "
                  "kernels Build compiles), asm (their x86 assembly) or, for a cuda target, ptx "
                  "(each kernel's PTX with ptxas's report of its registers, spills and shared "
                  "memory)")
      ->check(CLI::IsMember({"ir", "llvm", "asm", "ptx"}))
      ->capture_default_str();
  cmd->add_option("--kernel", *kernel, "with --emit llvm/asm/ptx: only this kernel");
  auto dynamic = std::make_shared<DynamicOptions>();
  AddDynamicOptions(cmd, *dynamic);
  return [cmd, model, pipeline, full, emit, kernel, dynamic]() {
    if (!*cmd) return -1;
    if (dynamic->enabled()) {
      // The module of each bucket's build: kernels lowered, guarded, with their dynamic_extent
      // parameter.
      if (*emit != "ir") throw ir::Error("--dynamic prints --emit ir only");
      ir::PrintOptions options;
      options.max_constant_bytes = *full ? -1 : 64;
      DynamicModel built = BuildDynamicModel(*model, *pipeline, *dynamic);
      for (const auto& bucket : built.executable->buckets()) {
        if (built.executable->buckets().size() > 1) {
          std::cout << fmt::format("// bucket {}\n", built.executable->SplitsFirstSymbolOnly()
                                                         ? kernels::ToString(bucket->range())
                                                         : kernels::ToString(bucket->ranges()));
        }
        std::cout << ir::PrintModule(bucket->executable().module(), options);
      }
      return 0;
    }
    ir::IRModule out = RunPipeline(LoadModel(*model), *pipeline);
    if (*emit == "ir") {
      ir::PrintOptions options;
      options.max_constant_bytes = *full ? -1 : 64;
      std::cout << ir::PrintModule(out, options);
      return 0;
    }
    ir::Target target = ir::ParseTarget(pipeline->target);
    if ((*emit == "ptx") != (target.kind == "cuda")) {
      throw ir::Error(
          *emit == "ptx"
              ? "--emit ptx needs a cuda target (e.g. --target \"cuda -arch=sm_90\")"
              : fmt::format("--emit {} is for llvm targets; for cuda use --emit ptx", *emit));
    }
    if (*emit == "ptx") {
      PrintPtx(out, backends::ResolveTarget(target), *kernel);
      return 0;
    }
    backends::BuildOptions build = backends::BuildOptionsFor(target);
    ir::IRModule legalized = backends::LegalizeForBuild(out, build);
    std::vector<ir::KernelFunction> kernels;
    std::vector<std::string> names;
    for (const auto& [name, function] : legalized.kernel_functions()) {
      names.push_back(name);
      if (kernel->empty() || name == *kernel) kernels.push_back(*function);
    }
    if (kernels.empty()) {
      throw ir::Error(fmt::format("no kernel named '{}'; the kernels are: {}", *kernel,
                                  fmt::join(names, ", ")));
    }
    backends::CodegenOptions codegen = backends::CodegenOptionsFor(out, build.codegen);
    std::cout << (*emit == "asm" ? backends::EmitAssembly(kernels, codegen)
                                 : backends::EmitLlvmIr(kernels, codegen));
    return 0;
  };
}

Command AddOpsCommand(CLI::App& app) {
  auto op = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "ops",
      "list the operators with their compute definitions, default schedules and the "
      "external backends that take them");
  cmd->add_option("op", *op, "show everything about this operator");
  return [cmd, op]() {
    if (!*cmd) return -1;
    std::cout << (op->empty() ? OpCatalogText(OpCatalog()) : OpDetailText(DescribeOp(*op)));
    return 0;
  };
}

}  // namespace tandem::tools
