// What the files of the Python module share: the functions that bind each part of the API onto
// the module, and conversions between Python values and Tandem's (attributes, tensors, modules).
// Every binding calls the same C++ functions as the `tandem` program's commands (tools/), so the
// two behave alike. Errors are ir::Error, which the module turns into tandem.Error.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file: one set of type casters

#include <functional>
#include <string>

#include "ir/attrs.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "ir/trace.h"

namespace tandem::python {

namespace py = pybind11;

void BindIr(py::module_& m);         // ir_bindings.cc: modules, functions, nodes, builder, traces
void BindPipelines(py::module_& m);  // pipeline_bindings.cc: pipelines, passes, ops, plugins
void BindPythonPasses(py::module_& m);  // python_passes.cc: passes written in Python
void BindTuning(py::module_& m);        // tune_bindings.cc: tune, replay, databases
void BindRunning(py::module_& m);       // run_bindings.cc: build, run, reference, bench

// Attribute values: int, float, str, list of ints, list of floats (ir::Error for anything else).
ir::AttrValue ToAttrValue(const py::handle& value, const std::string& what);
py::object FromAttrValue(const ir::AttrValue& value);
ir::Attrs ToAttrs(const py::dict& values, const std::string& what);
py::dict FromAttrs(const ir::Attrs& attrs);

// NumPy dtype <-> Tandem data type (ir::Error for a dtype Tandem has not).
ir::DataType ToDataType(const py::dtype& dtype);
py::dtype ToNumpyDtype(ir::DataType dtype);
// An array viewing the tensor's storage (no copy; the array keeps the storage alive).
py::array ToArray(const ir::Tensor& tensor);
// A tensor of `type` (shape and data type must match the array's, ir::Error naming `what`
// otherwise): zero-copy when the array views a Tandem tensor's storage whole (arrays made by
// ToArray: outputs, tandem.empty), else a copy (Tandem's tensors are 64-byte aligned and own
// their storage). `copied` says which.
ir::Tensor ToTensor(const py::array& array, const ir::TensorType& type, const std::string& what,
                    bool* copied = nullptr);
// A tensor with the array's own shape and data type (zero-copy or a copy, as above).
ir::Tensor ToTensor(const py::array& array, const std::string& what);

// Runs `call` holding the GIL and turns a Python exception into an ir::Error carrying its
// message, prefixed by `context` (so that C++ callers of Python code see Tandem's error type).
void CallPython(const std::string& context, const std::function<void()>& call);

}  // namespace tandem::python
