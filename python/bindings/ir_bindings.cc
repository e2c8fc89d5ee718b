// The IR API of the Python module: IRModule (import, print, parse, functions, attributes),
// GraphFunction and Node (read-only views), GraphBuilder (type-checked construction, what a
// Python pass rewrites with), Trace and Instruction.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "ir/file_read.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "python/bindings/bindings.h"

namespace tandem::python {

namespace {

// import_onnx(source): a path, bytes (a serialized ModelProto), or an object with
// SerializeToString (onnx.ModelProto).
ir::IRModule ImportOnnx(const py::object& source, const std::map<std::string, ir::Shape>& shapes) {
  frontend::OnnxImportOptions options;
  options.input_shapes = shapes;
  if (py::isinstance<py::str>(source) || py::hasattr(source, "__fspath__")) {
    std::string path = py::str(source).cast<std::string>();
    py::gil_scoped_release release;
    return frontend::ImportOnnxFile(path, options);
  }
  std::string bytes;
  if (py::isinstance<py::bytes>(source)) {
    bytes = source.cast<std::string>();
  } else if (py::hasattr(source, "SerializeToString")) {
    bytes = source.attr("SerializeToString")().cast<std::string>();
  } else {
    throw ir::Error("import_onnx takes a path, bytes or an onnx.ModelProto");
  }
  py::gil_scoped_release release;
  return frontend::ImportOnnxModel(bytes, "<onnx.ModelProto>", options);
}

template <typename Map>
std::vector<std::string> Keys(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& entry : map) keys.push_back(entry.first);
  return keys;
}

py::dict NodeType(const ir::Type& type) {
  py::dict out;
  out["text"] = ir::PrintType(type);
  if (type.is_tensor()) {
    out["shape"] = type.tensor().shape;
    out["dtype"] = ir::ToString(type.tensor().dtype);
    out["layout"] = type.tensor().layout;
  }
  return out;
}

}  // namespace

void BindIr(py::module_& m) {
  py::class_<ir::Node>(m, "Node", "One node of a graph function (read-only).")
      .def_property_readonly("kind", [](const ir::Node& n) { return ir::ToString(n.kind); })
      .def_readonly("name", &ir::Node::name)
      .def_readonly("op", &ir::Node::op)
      .def_readonly("callee", &ir::Node::callee)
      .def_readonly("inputs", &ir::Node::inputs, "operand node ids (indices into nodes)")
      .def_property_readonly("attrs", [](const ir::Node& n) { return FromAttrs(n.attrs); })
      .def_property_readonly("annotations",
                             [](const ir::Node& n) { return FromAttrs(n.annotations); })
      .def_property_readonly("type", [](const ir::Node& n) { return NodeType(n.type); })
      .def_property_readonly(
          "value",
          [](const ir::Node& n) -> py::object {
            if (n.kind != ir::NodeKind::kConstant) return py::none();
            return ToArray(n.value);
          },
          "a constant's data as an array (None for other nodes)")
      .def("__repr__", [](const ir::Node& n) {
        return fmt::format("<Node %{} {}{}>", n.name, ir::ToString(n.kind),
                           n.op.empty() ? "" : " " + n.op);
      });

  py::class_<ir::GraphFunction>(m, "GraphFunction", "A graph function (read-only).")
      .def_readonly("name", &ir::GraphFunction::name)
      .def_readonly("nodes", &ir::GraphFunction::nodes)
      .def_readonly("params", &ir::GraphFunction::params)
      .def_readonly("output", &ir::GraphFunction::output)
      .def_property_readonly("attrs", [](const ir::GraphFunction& f) { return FromAttrs(f.attrs); })
      .def("find", &ir::GraphFunction::Find, "the id of the node named so, or -1")
      .def("verify", [](const ir::GraphFunction& f) { ir::Verify(f); })
      .def("__str__", [](const ir::GraphFunction& f) { return ir::PrintFunction(f); });

  py::class_<ir::IRModule>(m, "IRModule",
                           "A model: graph functions, kernel functions and attributes. A value: "
                           "methods that change it return a new module.")
      .def(py::init<>())
      .def(
          "text",
          [](const ir::IRModule& module, bool full) {
            ir::PrintOptions options;
            options.max_constant_bytes = full ? -1 : 64;
            return ir::PrintModule(module, options);
          },
          py::arg("full_constants") = true,
          "the text form (docs/text_form.md); with every constant, it parses back exactly")
      .def("__str__", [](const ir::IRModule& module) { return ir::PrintModule(module); })
      .def_property_readonly(
          "hash",
          [](const ir::IRModule& module) { return ir::HashToHex(ir::StructuralHash(module)); },
          "the structural hash, as the tuning database keys models")
      .def("__eq__",
           [](const ir::IRModule& a, const ir::IRModule& b) { return ir::StructuralEqual(a, b); })
      .def("diff",
           [](const ir::IRModule& a, const ir::IRModule& b) { return ir::StructuralDiff(a, b); })
      .def_property_readonly(
          "functions", [](const ir::IRModule& module) { return Keys(module.graph_functions()); })
      .def_property_readonly(
          "kernels", [](const ir::IRModule& module) { return Keys(module.kernel_functions()); })
      .def("function", &ir::IRModule::Get, py::arg("name") = "main", py::return_value_policy::copy)
      .def(
          "with_function",
          [](ir::IRModule module, const ir::GraphFunction& function) {
            ir::Verify(function);
            module.Add(function);
            return module;
          },
          "a copy with `function` added, or replacing the function of its name")
      .def_property_readonly("attrs",
                             [](const ir::IRModule& module) { return FromAttrs(module.attrs()); })
      .def(
          "with_attr",
          [](ir::IRModule module, const std::string& key, const py::object& value) {
            module.attrs().Set(key, ToAttrValue(value, "with_attr"));
            return module;
          },
          "a copy with the module attribute set");

  m.def(
      "parse",
      [](const std::string& text, const std::string& name) { return ir::ParseModule(text, name); },
      py::arg("text"), py::arg("source_name") = "<text>",
      "parses the text form of a module; tandem.Error names the line and column of a mistake");
  m.def(
      "load",
      [](const std::string& path) {
        return ir::ParseModule(ir::ReadRegularFile(path, "model file"), path);
      },
      "reads a module from a file of the text form");
  m.def("import_onnx", &ImportOnnx, py::arg("model"),
        py::arg("input_shapes") = std::map<std::string, ir::Shape>{},
        "imports an ONNX model: a path, bytes, or an onnx.ModelProto; input_shapes gives "
        "concrete shapes for symbolic dimensions by input name");

  py::class_<ir::GraphBuilder>(m, "GraphBuilder",
                               "Builds a graph function; every call is type-checked at once.")
      .def(py::init<std::string>(), py::arg("name") = "main")
      .def(
          "input",
          [](ir::GraphBuilder& b, const std::string& name, const ir::Shape& shape,
             const std::string& dtype) {
            return b.Input(name, ir::TensorType{shape, ir::ParseDataType(dtype), ""});
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "f32")
      .def(
          "constant",
          [](ir::GraphBuilder& b, const py::array& value, const std::string& name) {
            return b.Constant(ToTensor(value, "constant").Clone(), name);
          },
          py::arg("value"), py::arg("name") = "")
      .def(
          "call",
          [](ir::GraphBuilder& b, const std::string& op, const std::vector<ir::ValueId>& inputs,
             const py::dict& attrs,
             const std::string& name) { return b.Call(op, inputs, ToAttrs(attrs, op), name); },
          py::arg("op"), py::arg("inputs"), py::arg("attrs") = py::dict(), py::arg("name") = "")
      .def("tuple", &ir::GraphBuilder::Tuple, py::arg("fields"), py::arg("name") = "")
      .def("tuple_get_item", &ir::GraphBuilder::TupleGetItem, py::arg("tuple"), py::arg("index"),
           py::arg("name") = "")
      .def("type_of",
           [](const ir::GraphBuilder& b, ir::ValueId id) { return NodeType(b.TypeOf(id)); })
      .def("finish", [](ir::GraphBuilder& b, const py::object& output) {
        if (py::isinstance<py::int_>(output)) return b.Finish(output.cast<ir::ValueId>());
        return b.Finish(output.cast<std::vector<ir::ValueId>>());
      });

  py::class_<ir::Instruction>(m, "Instruction", "One recorded step of a trace.")
      .def_readonly("kind", &ir::Instruction::kind)
      .def_readonly("inputs", &ir::Instruction::inputs)
      .def_readonly("outputs", &ir::Instruction::outputs)
      .def_property_readonly("attrs", [](const ir::Instruction& i) { return FromAttrs(i.attrs); })
      .def_property_readonly("decision",
                             [](const ir::Instruction& i) -> py::object {
                               return i.decision ? FromAttrValue(*i.decision) : py::none();
                             })
      .def_property_readonly("nested", [](const ir::Instruction& i) {
        py::list out;
        for (const ir::NestedTrace& nested : i.nested) {
          out.append(py::make_tuple(nested.label, ir::Trace(nested.instructions)));
        }
        return out;
      });

  py::class_<ir::Trace>(m, "Trace", "Decisions applied to a module, replayable (ir/trace.h).")
      .def_property_readonly("instructions", &ir::Trace::instructions)
      .def("__len__", &ir::Trace::size)
      .def("to_json", &ir::Trace::ToJson)
      .def_static("from_json", &ir::Trace::FromJson)
      .def("__str__", &ir::Trace::ToText)
      .def("__eq__", [](const ir::Trace& a, const ir::Trace& b) { return a == b; })
      .def("with_decision", [](const ir::Trace& t, size_t index, const py::object& decision) {
        return t.WithDecision(index, ToAttrValue(decision, "with_decision"));
      });
}

}  // namespace tandem::python
