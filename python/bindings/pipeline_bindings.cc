// Pipelines, passes, operators and plugins in Python: look up, parse, compose and print pipelines
// (passes/pipeline_text.h, pipelines/pipeline_registry.h), run them on a module as `tandem
// compile` does (tools::RunPipeline), list the passes and the operator catalog (`tandem ops`),
// and load plugins (`tandem --load-plugin`).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "ir/error.h"
#include "passes/pass_docs.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "plugins/plugin.h"
#include "python/bindings/bindings.h"
#include "python/bindings/pipeline.h"
#include "tools/commands.h"
#include "tools/op_catalog.h"

namespace tandem::python {

namespace {

py::dict OpDict(const tools::OpImplementations& op) {
  py::dict out;
  out["op"] = op.op;
  out["doc"] = op.doc;
  out["fusion_kind"] = op.pattern_kind;
  out["inputs"] = py::make_tuple(op.min_inputs, op.max_inputs);
  out["attributes"] = op.attributes;
  out["compute"] = op.has_compute;
  out["compute_operands"] = op.compute_operands;
  py::dict schedules;
  for (const auto& [kind, text] : op.default_schedules) schedules[py::str(kind)] = text;
  out["default_schedules"] = schedules;
  py::list backends;
  for (const tools::OpBackendUse& use : op.backends) {
    py::dict entry;
    entry["backend"] = use.backend;
    entry["pattern"] = use.pattern;
    entry["role"] = use.role;
    entry["matcher"] = use.matcher;
    entry["available"] = use.available;
    entry["why"] = use.why;
    backends.append(entry);
  }
  out["backends"] = backends;
  return out;
}

py::dict PassDict(const passes::PassDef& def) {
  py::dict out;
  out["name"] = def.name;
  out["doc"] = def.doc;
  out["required"] = def.required;
  out["is_tuning"] = def.is_tuning;
  out["takes_eval_passes"] = def.takes_eval_passes;
  py::dict arguments;
  for (const ir::AttrSpec& spec : def.arguments) {
    arguments[py::str(spec.name)] =
        spec.default_value ? FromAttrValue(*spec.default_value) : py::object(py::none());
  }
  out["arguments"] = arguments;
  return out;
}

}  // namespace

passes::PassPtr ToPass(const py::object& pipeline, const std::string& target) {
  if (py::isinstance<Pipeline>(pipeline)) return pipeline.cast<const Pipeline&>().pass;
  if (py::isinstance<py::str>(pipeline)) {
    return pipelines::PipelineRegistry::Global().Create(pipeline.cast<std::string>(),
                                                        ir::ParseTarget(target));
  }
  throw ir::Error("a pipeline is a registered pipeline's name or a tandem.Pipeline");
}

void BindPipelines(py::module_& m) {
  py::class_<Pipeline>(m, "Pipeline",
                       "A pass or a pipeline of passes (nested eval passes included). Printing "
                       "gives its canonical pipeline text, which parses back to it.")
      .def_property_readonly("text",
                             [](const Pipeline& p) { return passes::PrintPipeline(*p.pass); })
      .def("__str__", [](const Pipeline& p) { return passes::PrintPipeline(*p.pass); })
      .def("__repr__",
           [](const Pipeline& p) {
             return fmt::format("tandem.parse_pipeline({:?})", passes::PrintPipeline(*p.pass));
           })
      .def(
          "tree", [](const Pipeline& p) { return passes::PrintPipelineTree(*p.pass); },
          "one pass per line, nested passes indented under their tuning pass")
      .def_property_readonly("name", [](const Pipeline& p) { return p.pass->name(); })
      .def_property_readonly("is_tuning",
                             [](const Pipeline& p) { return p.pass->info().is_tuning; })
      .def_property_readonly("is_group", [](const Pipeline& p) { return p.pass->IsGroup(); })
      .def_property_readonly("arguments",
                             [](const Pipeline& p) {
                               py::dict out;
                               for (const auto& [key, value] : p.pass->arguments())
                                 out[py::str(key)] = FromAttrValue(value);
                               return out;
                             })
      .def_property_readonly(
          "nested",
          [](const Pipeline& p) {
            std::vector<Pipeline> out;
            for (const passes::PassPtr& pass : p.pass->nested()) out.push_back({pass});
            return out;
          },
          "the members of a sequence, or the eval passes of a tuning pass")
      .def(
          "__add__",
          [](const Pipeline& a, const Pipeline& b) {
            return Pipeline{passes::MakeSequential({a.pass, b.pass})};
          },
          "the two run one after the other")
      .def("__eq__", [](const Pipeline& a, const Pipeline& b) {
        return passes::PrintPipeline(*a.pass) == passes::PrintPipeline(*b.pass);
      });

  m.def(
      "pipeline",
      [](const std::string& name, const std::string& target) {
        return Pipeline{
            pipelines::PipelineRegistry::Global().Create(name, ir::ParseTarget(target))};
      },
      py::arg("name"), py::arg("target") = "llvm",
      "the registered pipeline `name` (its variant for the target's kind, if any)");
  m.def(
      "parse_pipeline",
      [](const std::string& text) { return Pipeline{passes::ParsePipeline(text)}; },
      py::arg("text"), "parses pipeline text: `InferType, TuneLayout(eval=[FuseOps])`");
  m.def(
      "sequential",
      [](const std::vector<Pipeline>& parts) {
        std::vector<passes::PassPtr> members;
        for (const Pipeline& part : parts) members.push_back(part.pass);
        return Pipeline{passes::MakeSequential(std::move(members))};
      },
      "the pipelines run one after the other");
  m.def("pipelines", [] {
    py::list out;
    for (const pipelines::PipelineDef& def : pipelines::PipelineRegistry::Global().List()) {
      py::dict entry;
      entry["name"] = def.name;
      entry["target_kind"] = def.target_kind;
      entry["description"] = def.description;
      entry["text"] = def.text;
      out.append(entry);
    }
    return out;
  });
  m.def(
      "register_pipelines",
      [](const std::string& text, const std::string& source) {
        pipelines::PipelineRegistry::Global().LoadText(text, source);
      },
      py::arg("text"), py::arg("source_name") = "<python>",
      "registers pipelines written as a pipeline file ([name], description = , passes = )");
  m.def("passes", [] {
    py::list out;
    const passes::PassRegistry& registry = passes::PassRegistry::Global();
    for (const std::string& name : registry.Names()) out.append(PassDict(registry.Get(name)));
    return out;
  });
  m.def("passes_text", [] { return passes::PassRegistryText(passes::PassRegistry::Global()); });
  m.def(
      "compile",
      [](const ir::IRModule& module, const py::object& pipeline, const std::string& target,
         const std::string& db, const std::string& trace) {
        tools::PipelineOptions options;
        options.text = passes::PrintPipeline(*ToPass(pipeline, target));
        options.target = target;
        options.database = db;
        options.trace = trace;
        py::gil_scoped_release release;
        return tools::RunPipeline(module, options);
      },
      py::arg("module"), py::arg("pipeline") = "default_heuristic", py::arg("target") = "llvm",
      py::arg("db") = "", py::arg("trace") = "",
      "runs a pipeline on the module as `tandem compile` does: with `db`, a run of this "
      "pipeline that `tune` recorded is replayed, else kernels take their best recorded "
      "schedules; with `trace` (a --save-trace file), its decisions are replayed");

  m.def(
      "ops",
      [] {
        py::list out;
        for (const tools::OpImplementations& op : tools::OpCatalog()) out.append(OpDict(op));
        return out;
      },
      "every operator with its compute definition, default schedules and external backends");
  m.def("op", [](const std::string& name) { return OpDict(tools::DescribeOp(name)); });
  m.def(
      "ops_text",
      [](const std::string& name) {
        return name.empty() ? tools::OpCatalogText(tools::OpCatalog())
                            : tools::OpDetailText(tools::DescribeOp(name));
      },
      py::arg("op") = "", "what `tandem ops [OP]` prints");

  m.def(
      "load_plugin",
      [](const std::string& path) {
        plugins::LoadedPlugin plugin = plugins::LoadPlugin(path);
        return plugin.registered;
      },
      py::arg("path"),
      "loads a plugin (a shared library built against the installed Tandem package) and "
      "returns what it registered, each entry 'kind name'");
}

}  // namespace tandem::python
