// Building and running from Python: build a module into an Executable (backends::Build with the
// options `tandem run` uses), run it on NumPy arrays (inputs zero-copy when C-contiguous and
// 64-byte aligned, outputs always zero-copy views of the result tensors), run the reference
// interpreter, read ONNX test data, and time executables and Python callables in turns
// (bench::MeasureInTurns, as `tandem bench` times its contenders).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "bench/interleaved_timing.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "python/bindings/bindings.h"

namespace tandem::python {

namespace {

struct PyExecutable {
  std::shared_ptr<backends::Executable> executable;
  int64_t copied_inputs = 0;  // inputs of the last run that could not be used in place
};

// An executable with its inputs fixed: what bench times without the interpreter in the loop.
struct BoundExecutable {
  std::shared_ptr<backends::Executable> executable;
  std::vector<ir::Tensor> inputs;
  std::vector<ir::Tensor> outputs;
  void Run() { executable->RunInto(inputs, outputs); }
};

std::vector<ir::Tensor> InputTensors(const backends::Executable& exe, const py::args& arrays,
                                     int64_t* copied) {
  const std::vector<ir::TensorType>& types = exe.input_types();
  if (arrays.size() != types.size()) {
    throw ir::Error(
        fmt::format("the model takes {} inputs, {} given", types.size(), arrays.size()));
  }
  std::vector<ir::Tensor> inputs;
  *copied = 0;
  for (size_t i = 0; i < arrays.size(); ++i) {
    bool was_copied = false;
    py::array array = py::array::ensure(arrays[i]);
    if (!array) throw ir::Error(fmt::format("input {}: not convertible to an array", i));
    inputs.push_back(ToTensor(array, types[i], fmt::format("input {}", i), &was_copied));
    *copied += was_copied ? 1 : 0;
  }
  return inputs;
}

std::vector<std::string> TypeTexts(const std::vector<ir::TensorType>& types) {
  std::vector<std::string> texts;
  for (const ir::TensorType& type : types) texts.push_back(ir::ToString(type));
  return texts;
}

py::list Arrays(const std::vector<ir::Tensor>& tensors) {
  py::list out;
  for (const ir::Tensor& tensor : tensors) out.append(ToArray(tensor));
  return out;
}

std::vector<ir::Tensor> Tensors(const std::vector<py::array>& arrays) {
  std::vector<ir::Tensor> out;
  for (size_t i = 0; i < arrays.size(); ++i) {
    out.push_back(ToTensor(arrays[i], fmt::format("input {}", i)));
  }
  return out;
}

// Contenders of bench: an executable bound to inputs runs in C++; anything else is a Python
// callable called with no arguments.
py::dict Bench(const py::dict& contenders, int passes, double min_time, int min_repeats) {
  std::vector<std::string> names;
  std::vector<bench::Contender> timed;
  for (const auto& [key, value] : contenders) {
    names.push_back(py::str(key).cast<std::string>());
    bench::Contender contender;
    if (py::isinstance<BoundExecutable>(value)) {
      BoundExecutable* bound = value.cast<BoundExecutable*>();
      contender.run = [bound] { bound->Run(); };
    } else if (PyCallable_Check(value.ptr())) {
      auto callable = std::make_shared<py::object>(py::reinterpret_borrow<py::object>(value));
      std::string name = names.back();
      contender.run = [callable, name] {
        CallPython(fmt::format("bench contender {}", name), [&] { (*callable)(); });
      };
    } else {
      throw ir::Error(
          fmt::format("bench contender {}: neither a callable nor "
                      "Executable.bind(...)",
                      names.back()));
    }
    timed.push_back(std::move(contender));
  }
  std::vector<bench::Contender*> pointers;
  for (bench::Contender& contender : timed) pointers.push_back(&contender);
  bench::TimingOptions options;
  options.passes = passes;
  options.min_time = min_time;
  options.min_repeats = min_repeats;
  {
    py::gil_scoped_release release;
    bench::MeasureInTurns(pointers, options);
  }
  py::dict out;
  for (size_t i = 0; i < names.size(); ++i) {
    py::dict entry;
    entry["best_seconds"] = timed[i].best();
    entry["worst_seconds"] = timed[i].worst();
    entry["block_medians"] = timed[i].block_medians;
    entry["repeats"] = timed[i].repeats;
    out[py::str(names[i])] = entry;
  }
  return out;
}

}  // namespace

void BindRunning(py::module_& m) {
  py::class_<BoundExecutable>(m, "BoundExecutable",
                              "An executable with fixed inputs, timed by bench without Python "
                              "in the loop; calling it runs it.")
      .def("__call__", [](BoundExecutable& b) {
        {
          py::gil_scoped_release release;
          b.Run();
        }
        return Arrays(b.outputs);
      });

  py::class_<PyExecutable>(m, "Executable", "A built module: machine code and its run plan.")
      .def(
          "run",
          [](PyExecutable& exe, const py::args& arrays) {
            std::vector<ir::Tensor> inputs =
                InputTensors(*exe.executable, arrays, &exe.copied_inputs);
            std::vector<ir::Tensor> outputs;
            {
              py::gil_scoped_release release;
              outputs = exe.executable->Run(inputs);
            }
            return Arrays(outputs);
          },
          "runs on NumPy arrays (one per input, in order); returns the outputs as arrays")
      .def("bind",
           [](PyExecutable& exe, const py::args& arrays) {
             int64_t copied = 0;
             BoundExecutable bound{
                 exe.executable, InputTensors(*exe.executable, arrays, &copied), {}};
             for (const ir::TensorType& type : exe.executable->output_types()) {
               bound.outputs.emplace_back(type);
             }
             return bound;
           })
      .def_readonly("copied_inputs", &PyExecutable::copied_inputs,
                    "how many inputs of the last run were copied (not C-contiguous, not "
                    "64-byte aligned) rather than used in place")
      .def_property_readonly(
          "input_types",
          [](const PyExecutable& exe) { return TypeTexts(exe.executable->input_types()); })
      .def_property_readonly(
          "output_types",
          [](const PyExecutable& exe) { return TypeTexts(exe.executable->output_types()); })
      .def("profile", [](const PyExecutable& exe) { return exe.executable->ProfileTable(); });

  m.def(
      "build",
      [](const ir::IRModule& module, const std::string& target, const std::string& function,
         int threads) {
        if (threads > 0) backends::ThreadPool::Global().SetNumThreads(threads);
        backends::BuildOptions options =
            backends::BuildOptionsFor(ir::ParseTarget(target), function);
        py::gil_scoped_release release;
        return PyExecutable{
            std::shared_ptr<backends::Executable>(backends::Build(module, options))};
      },
      py::arg("module"), py::arg("target") = "llvm", py::arg("function") = "main",
      py::arg("threads") = 0,
      "builds a module (as a pipeline left it) for a CPU target, as `tandem run` does; "
      "threads > 0 sets the threads of parallel loops");
  m.def(
      "reference",
      [](const ir::IRModule& module, const std::vector<py::array>& inputs,
         const std::string& function) {
        std::vector<ir::Tensor> tensors = Tensors(inputs);
        std::vector<ir::Tensor> outputs;
        {
          py::gil_scoped_release release;
          outputs = backends::RunReference(module, tensors, function);
        }
        return Arrays(outputs);
      },
      py::arg("module"), py::arg("inputs"), py::arg("function") = "main",
      "runs the module on the reference interpreter (slow, obviously correct)");
  m.def(
      "random_inputs",
      [](const ir::IRModule& module, uint64_t seed, const std::string& function) {
        return Arrays(backends::RandomInputs(module.Get(function), seed));
      },
      py::arg("module"), py::arg("seed") = 0, py::arg("function") = "main");
  m.def(
      "read_tensors",
      [](const std::string& dir, const std::string& prefix) {
        return Arrays(frontend::ReadTensorProtoDirectory(dir, prefix));
      },
      py::arg("directory"), py::arg("prefix") = "output",
      "reads PREFIX_0.pb, PREFIX_1.pb, ... (ONNX TensorProto) from a test-data directory");
  m.def(
      "empty",
      [](const std::vector<int64_t>& shape, const py::dtype& dtype) {
        return ToArray(ir::Tensor(ir::Shape(shape), ToDataType(dtype)));
      },
      py::arg("shape"), py::arg("dtype") = py::dtype("float32"),
      "a zero-filled array in 64-byte aligned memory, which Executable.run uses in place");
  m.def(
      "relative_error",
      [](const py::array& actual, const py::array& expected) {
        return ir::RelativeError(ToTensor(actual, "actual"), ToTensor(expected, "expected"));
      },
      "||a - b|| / ||b|| as every Tandem check computes it");
  m.def(
      "bench", &Bench, py::arg("contenders"), py::arg("passes") = 5, py::arg("min_time") = 0.2,
      py::arg("min_repeats") = 10,
      "times contenders in turns, as `tandem bench` does: a dict of names to Executable.bind(...) "
      "or to callables (PyTorch, ONNX Runtime ...); returns each one's best and worst pass "
      "median in seconds");
}

}  // namespace tandem::python
