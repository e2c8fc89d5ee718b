// `tandem show`, `tandem pipelines` and `tandem compile`: look at a model, at the registered
// pipelines, and at what a pipeline makes of a model.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "backends/llvm/codegen.h"
#include "backends/runtime/executable.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "passes/pass_docs.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"

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
                  "kernels Build compiles) or asm (their x86 assembly)")
      ->check(CLI::IsMember({"ir", "llvm", "asm"}))
      ->capture_default_str();
  cmd->add_option("--kernel", *kernel, "with --emit llvm/asm: only this kernel");
  return [cmd, model, pipeline, full, emit, kernel]() {
    if (!*cmd) return -1;
    ir::IRModule out = RunPipeline(LoadModel(*model), *pipeline);
    if (*emit == "ir") {
      ir::PrintOptions options;
      options.max_constant_bytes = *full ? -1 : 64;
      std::cout << ir::PrintModule(out, options);
      return 0;
    }
    backends::BuildOptions build = backends::BuildOptionsFor(ir::ParseTarget(pipeline->target));
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

}  // namespace tandem::tools
