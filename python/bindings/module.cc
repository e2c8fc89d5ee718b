// The extension module tandem._tandem (the package python/tandem/ re-exports it): Tandem's
// compiler from Python. Every ir::Error becomes a tandem.Error carrying Tandem's message.
#include <pybind11/pybind11.h>

#include "ir/error.h"
#include "python/bindings/bindings.h"

PYBIND11_MODULE(_tandem, m) {
  using namespace tandem::python;
  m.doc() = "Tandem: tunes graph-level and kernel-level decisions of deep-learning models jointly";
  pybind11::register_exception<tandem::ir::Error>(m, "Error", PyExc_RuntimeError);
  BindIr(m);
  BindPipelines(m);
  BindPythonPasses(m);
  BindTuning(m);
  BindRunning(m);
}
