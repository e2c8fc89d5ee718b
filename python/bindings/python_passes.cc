// Passes written in Python, registered under a name in the process's pass registry so that
// pipeline text names them like any built-in pass:
//   - a heuristic pass: a Python callable module -> module (with keyword arguments declared with
//     their defaults), run as a passes::FunctionPass;
//   - a tuning pass: a Python callable that proposes the candidates for a module, a mapping of
//     choice names to callables module -> module; it is a passes::KnobPass, so Tandem evaluates
//     the choices through the pass's eval passes, the session's builder and runner and the
//     database, and records the chosen name in the trace (ReplayTrace asks the callable for the
//     choices again and applies the recorded one).
// The Python objects are kept for the life of the process (the registry is process-wide).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "ir/error.h"
#include "passes/pass_registry.h"
#include "passes/pipeline_text.h"
#include "passes/tuning/knob_pass.h"
#include "python/bindings/bindings.h"
#include "python/bindings/pipeline.h"

namespace tandem::python {

namespace {

thread_local passes::PassContext* current_context = nullptr;

// Makes `context` the current one while Python code runs for a pass.
class ContextScope {
 public:
  explicit ContextScope(passes::PassContext* context) : previous_(current_context) {
    current_context = context;
  }
  ~ContextScope() { current_context = previous_; }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  passes::PassContext* previous_;
};

ir::IRModule ModuleResult(const py::object& result, const std::string& what) {
  if (!py::isinstance<ir::IRModule>(result)) {
    throw ir::Error(fmt::format("{} returned {}, not a tandem.IRModule", what,
                                py::type::handle_of(result).attr("__name__").cast<std::string>()));
  }
  return result.cast<ir::IRModule>();
}

// A Python object shared by C++ callables; released with the GIL held.
std::shared_ptr<py::object> Keep(const py::object& object) {
  return std::shared_ptr<py::object>(new py::object(object), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

void RegisterPythonPass(const std::string& name, const py::object& function,
                        const std::string& summary, const std::vector<std::string>& required,
                        const py::dict& arguments) {
  passes::PassDef def;
  def.name = name;
  def.doc = summary.empty() ? "A pass written in Python." : summary;
  def.required = required;
  for (const auto& [key, value] : arguments) {
    std::string argument = py::str(key).cast<std::string>();
    ir::AttrValue default_value =
        ToAttrValue(value, fmt::format("pass {}: argument {}", name, argument));
    def.arguments.push_back({argument, ir::KindOf(default_value), default_value, ""});
  }
  // Kept for the process's life: the registry outlives the interpreter's finalization.
  auto* callable = new py::object(function);
  std::vector<ir::AttrSpec> specs = def.arguments;
  def.create = [name, required, callable, specs](passes::PassArguments args,
                                                 std::vector<passes::PassPtr>) -> passes::PassPtr {
    return std::make_shared<passes::FunctionPass>(
        passes::PassInfo{name, required, false}, std::move(args),
        [name, callable, specs](const ir::IRModule& module, passes::PassContext& context,
                                const passes::PassArguments& given) {
          ContextScope scope(&context);
          ir::IRModule out;
          CallPython(fmt::format("Python pass {}", name), [&] {
            py::dict kwargs;
            for (const ir::AttrSpec& spec : specs) {
              kwargs[py::str(spec.name)] = FromAttrValue(*spec.default_value);
            }
            for (const auto& [key, value] : given) kwargs[py::str(key)] = FromAttrValue(value);
            out = ModuleResult((*callable)(module, **kwargs), fmt::format("pass {}", name));
          });
          return out;
        });
  };
  passes::PassRegistry::Global().Register(std::move(def));
}

struct PythonTuningOptions : passes::SearchOptions {};

// The knob of a Python tuning pass: the choices its callable proposes for `module`.
tuning::Knob PythonKnob(const std::string& name, const std::shared_ptr<py::object>& propose,
                        const ir::IRModule& module, passes::PassContext& context) {
  std::vector<tuning::Choice> choices;
  CallPython(fmt::format("Python tuning pass {}", name), [&] {
    ContextScope scope(&context);
    py::object proposed = (*propose)(module);
    py::object items = py::isinstance<py::dict>(proposed) ? proposed.attr("items")() : proposed;
    for (const py::handle& item : items) {
      auto pair = item.cast<py::tuple>();
      if (pair.size() != 2) {
        throw ir::Error(
            fmt::format("tuning pass {}: a candidate is a (name, function) pair", name));
      }
      std::string choice = py::str(pair[0]).cast<std::string>();
      std::shared_ptr<py::object> apply = Keep(py::reinterpret_borrow<py::object>(pair[1]));
      choices.push_back(tuning::Choice{
          choice, [name, choice, apply, &context](const ir::IRModule& m) {
            ir::IRModule out;
            CallPython(fmt::format("Python tuning pass {}, choice {}", name, choice), [&] {
              ContextScope scope(&context);
              out = ModuleResult((*apply)(m), fmt::format("choice {} of {}", choice, name));
            });
            return out;
          }});
    }
  });
  return tuning::Knob(name, std::move(choices));
}

void RegisterPythonTuningPass(const std::string& name, const py::object& propose,
                              const std::string& summary,
                              const std::vector<std::string>& required) {
  // Kept for the process's life, as above.
  auto keep = std::shared_ptr<py::object>(new py::object(propose), [](py::object*) {});
  passes::RegisterKnobPass<PythonTuningOptions>(
      passes::PassRegistry::Global(),
      {.name = name,
       .summary = summary.empty() ? "A tuning pass written in Python." : summary,
       .required = required},
      [name, keep](const ir::IRModule& module, passes::PassContext& context,
                   const PythonTuningOptions&) { return PythonKnob(name, keep, module, context); });
}

}  // namespace

passes::PassContext* CurrentPassContext() {
  return current_context;
}

void BindPythonPasses(py::module_& m) {
  m.def("register_pass", &RegisterPythonPass, py::arg("name"), py::arg("function"),
        py::arg("summary") = "", py::arg("required") = std::vector<std::string>{},
        py::arg("arguments") = py::dict(),
        "registers function(module, **arguments) -> module as the heuristic pass `name`; "
        "`arguments` maps each argument to its default (int, float, str or list)");
  m.def("register_tuning_pass", &RegisterPythonTuningPass, py::arg("name"), py::arg("propose"),
        py::arg("summary") = "", py::arg("required") = std::vector<std::string>{},
        "registers the tuning pass `name`: propose(module) returns its candidates, a dict (or "
        "pairs) of choice names to functions module -> module, the first the no-change one");
  m.def(
      "apply",
      [](const ir::IRModule& module, const py::object& pipeline, const std::string& target) {
        passes::PassPtr pass = ToPass(pipeline, target);
        py::gil_scoped_release release;  // Python passes in it take the GIL back
        if (passes::PassContext* context = CurrentPassContext()) {
          // As a built-in pass runs a registered one (RunRegisteredPass): the enclosing pass
          // answers for what runs before it.
          return context->RunPass(*pass, module);
        }
        passes::PassContext context;
        context.target = ir::ParseTarget(target);
        return context.RunPipeline(*pass, module);
      },
      py::arg("module"), py::arg("pipeline"), py::arg("target") = "llvm",
      "runs a pipeline (a tandem.Pipeline or a registered name) on the module, its required "
      "passes checked; inside a Python pass, through that pass's context (its target and "
      "instruments), as a built-in pass runs another");
}

}  // namespace tandem::python
