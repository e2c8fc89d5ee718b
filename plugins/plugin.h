// Out-of-tree plugins: a shared library, built against the installed Tandem package
// (find_package(Tandem), target Tandem::compiler), that adds passes, schedule rules,
// postprocessors, mutators, external backends and pipelines to a running Tandem: the `tandem`
// program (`tandem --load-plugin libmy_passes.so ...`) or the Python module
// (`tandem.load_plugin(path)`). examples/plugin/ is a complete one.
//
// A plugin defines its entry point with TANDEM_PLUGIN and registers through the registrar:
//
//   #include "plugins/plugin.h"
//   TANDEM_PLUGIN(registrar) {
//     tandem::passes::RegisterFunctionPass<tandem::passes::NoOptions>(registrar.passes, {...}, fn);
//     tandem::kernels::RegisterScheduleRule("my_rule", factory);
//     registrar.backends.Register(std::make_shared<MyBackend>());
//   }
//
// Guarantees: a plugin is loaded at most once per process (a second LoadPlugin of the same file
// returns what the first registered, and runs nothing); every failure (no such file, not a
// shared library, no entry point, a plugin built for another plugin API version, an error thrown
// while registering, such as a pass name that is taken) is an ir::Error naming the file. A
// plugin stays loaded until the process ends (the registries hold its code).
#pragma once

#include <string>
#include <vector>

#include "backends/external/external_backend.h"
#include "kernels/search/search_space.h"
#include "passes/pass_declaration.h"
#include "passes/pass_registry.h"
#include "pipelines/pipeline_registry.h"

namespace tandem::plugins {

// Bumped whenever what a plugin may rely on changes incompatibly (the registrar, the registries).
inline constexpr int kPluginApiVersion = 1;

// What a plugin registers into: the process's registries. Schedule rules, postprocessors and
// mutators are registered with kernels::RegisterScheduleRule, RegisterPostprocessor and
// RegisterMutator (kernels/search/search_space.h), which are process-wide too.
struct PluginRegistrar {
  passes::PassRegistry& passes;
  backends::ExternalBackendRegistry& backends;
  pipelines::PipelineRegistry& pipelines;
};

// What loading a plugin added, each entry "kind name" ("pass MyPass", "schedule_rule my_rule",
// "mutator my_mutator", "postprocessor p", "backend my_backend", "pipeline my_pipeline").
struct LoadedPlugin {
  std::string path;  // as given
  std::vector<std::string> registered;
};

// Loads the plugin at `path` (a path to a shared library; a bare file name is looked up by the
// dynamic loader) and runs its entry point. Errors: see the file comment.
LoadedPlugin LoadPlugin(const std::string& path);
// The plugins loaded in this process, in load order.
std::vector<LoadedPlugin> LoadedPlugins();

}  // namespace tandem::plugins

// Defines the entry points of a plugin: its API version, and the registration function whose
// body follows the macro, with `registrar` a tandem::plugins::PluginRegistrar&.
#define TANDEM_PLUGIN(registrar)                                                      \
  extern "C" __attribute__((visibility("default"))) int tandem_plugin_api_version() { \
    return ::tandem::plugins::kPluginApiVersion;                                      \
  }                                                                                   \
  extern "C" __attribute__((visibility("default"))) void tandem_register_plugin(      \
      ::tandem::plugins::PluginRegistrar& registrar)
