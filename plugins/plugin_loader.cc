// LoadPlugin: dlopen, check the API version, run the entry point, and say what it registered (by
// comparing the registries' names before and after).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>

#include "ir/error.h"
#include "plugins/plugin.h"

namespace tandem::plugins {

namespace {

using NameLists = std::map<std::string, std::vector<std::string>>;

std::vector<std::string> PipelineNames() {
  std::vector<std::string> names;
  for (const pipelines::PipelineDef& def : pipelines::PipelineRegistry::Global().List()) {
    names.push_back(def.target_kind.empty() ? def.name : def.name + "@" + def.target_kind);
  }
  return names;
}

// Every registered name, by kind.
NameLists RegisteredNames() {
  return {{"pass", passes::PassRegistry::Global().Names()},
          {"schedule_rule", kernels::ScheduleRuleNames()},
          {"postprocessor", kernels::PostprocessorNames()},
          {"mutator", kernels::MutatorNames()},
          {"backend", backends::ExternalBackendRegistry::Global().Names()},
          {"pipeline", PipelineNames()}};
}

std::vector<std::string> Added(const NameLists& before, const NameLists& after) {
  std::vector<std::string> added;
  for (const auto& [kind, names] : after) {
    const std::vector<std::string>& old = before.at(kind);
    for (const std::string& name : names) {
      if (std::find(old.begin(), old.end(), name) == old.end()) added.push_back(kind + " " + name);
    }
  }
  return added;
}

std::string DlError() {
  const char* error = dlerror();
  return error ? error : "unknown error";
}

struct Loaded {
  std::mutex mutex;
  std::vector<LoadedPlugin> plugins;
  std::map<void*, size_t> by_handle;  // dlopen handle -> index in plugins
};

Loaded& LoadedState() {
  static Loaded loaded;
  return loaded;
}

}  // namespace

LoadedPlugin LoadPlugin(const std::string& path) {
  // 1. Open the library (its undefined symbols resolve against the process: Tandem itself).
  ir::ErrorLocation where{.file = path};
  if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) {
    throw ir::Error("plugin: no such file", where);
  }
  Loaded& loaded = LoadedState();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    throw ir::Error(fmt::format("plugin: cannot load it: {}", DlError()), where);
  }
  // 2. Loaded before (under this or another name): nothing runs again.
  if (auto it = loaded.by_handle.find(handle); it != loaded.by_handle.end()) {
    dlclose(handle);  // drops the reference this dlopen added; the library stays loaded
    return loaded.plugins[it->second];
  }
  // 3. Check the entry points and the API version.
  using Version = int (*)();
  using Register = void (*)(PluginRegistrar&);
  auto version = reinterpret_cast<Version>(dlsym(handle, "tandem_plugin_api_version"));
  auto entry = reinterpret_cast<Register>(dlsym(handle, "tandem_register_plugin"));
  if (!version || !entry) {
    dlclose(handle);
    throw ir::Error(
        "plugin: not a Tandem plugin (no tandem_register_plugin and "
        "tandem_plugin_api_version; define them with TANDEM_PLUGIN)",
        where);
  }
  if (int v = version(); v != kPluginApiVersion) {
    dlclose(handle);
    throw ir::Error(fmt::format("plugin: built for plugin API version {}, this Tandem has {}", v,
                                kPluginApiVersion),
                    where);
  }
  // 4. Register, and name what was added. The library is never closed from here on: a
  //    registration that failed half-way may have left factories that point into it.
  NameLists before = RegisteredNames();
  PluginRegistrar registrar{passes::PassRegistry::Global(),
                            backends::ExternalBackendRegistry::Global(),
                            pipelines::PipelineRegistry::Global()};
  try {
    entry(registrar);
  } catch (const std::exception& e) {
    throw ir::Error(fmt::format("plugin: registration failed: {}", e.what()), where);
  }
  LoadedPlugin plugin{path, Added(before, RegisteredNames())};
  loaded.by_handle[handle] = loaded.plugins.size();
  loaded.plugins.push_back(plugin);
  return plugin;
}

std::vector<LoadedPlugin> LoadedPlugins() {
  Loaded& loaded = LoadedState();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  return loaded.plugins;
}

}  // namespace tandem::plugins
