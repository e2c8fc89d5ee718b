// The `tandem` command-line program.
//
// Subcommands:
//   show MODEL        print the graph IR of an ONNX model or a text IR file
//   interpret MODEL   run a model on the reference interpreter (random inputs or --inputs DIR),
//                     print its outputs, compare with --check DIR, write --outputs DIR
// User errors (bad files, bad IR, shape mismatches) print a message and exit with status 1;
// they never abort the process.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "backends/reference/interpreter.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace tandem::tools {
namespace {

namespace fs = std::filesystem;

// Parses "name=1,3,224,224" into an entry of `shapes`.
void ParseInputShape(const std::string& text, std::map<std::string, ir::Shape>& shapes) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    throw ir::Error(fmt::format("--input-shape '{}' must look like NAME=1,3,224,224", text));
  }
  ir::Shape shape;
  std::stringstream dims(text.substr(eq + 1));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    try {
      size_t used = 0;
      int64_t d = std::stoll(dim, &used);
      if (used != dim.size() || d < 0) throw std::invalid_argument(dim);
      shape.push_back(d);
    } catch (const std::exception&) {
      throw ir::Error(fmt::format("--input-shape '{}': '{}' is not a non-negative integer", text, dim));
    }
  }
  shapes[text.substr(0, eq)] = shape;
}

struct ModelOptions {
  std::string path;
  std::vector<std::string> input_shapes;
};

// Loads an ONNX model (.onnx) or a Tandem text IR file (anything else).
ir::IRModule LoadModel(const ModelOptions& options) {
  if (!fs::exists(options.path)) throw ir::Error(fmt::format("no such file: {}", options.path));
  if (fs::path(options.path).extension() == ".onnx") {
    frontend::OnnxImportOptions import_options;
    for (const std::string& s : options.input_shapes) ParseInputShape(s, import_options.input_shapes);
    return frontend::ImportOnnxFile(options.path, import_options);
  }
  std::ifstream in(options.path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return ir::ParseModule(text.str(), options.path);
}

void AddModelOptions(CLI::App* command, ModelOptions& options) {
  command->add_option("model", options.path, "ONNX model (.onnx) or Tandem IR text file")
      ->required();
  command->add_option("--input-shape", options.input_shapes,
                      "concrete shape for an input with symbolic dimensions, NAME=1,3,224,224 "
                      "(repeatable)");
}

std::string Summarize(const ir::Tensor& t) {
  std::vector<double> v = t.ToDoubles();
  std::string head;
  for (size_t i = 0; i < std::min<size_t>(v.size(), 8); ++i) {
    head += (i ? ", " : "") + fmt::format("{:.6g}", v[i]);
  }
  if (v.size() > 8) head += ", ...";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (double x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  return fmt::format("{} [{}]\n    min {:.6g}  max {:.6g}  mean {:.6g}", ir::ToString(t.type()),
                     head, lo, hi, v.empty() ? 0.0 : sum / static_cast<double>(v.size()));
}

int Show(const ModelOptions& model, bool full_constants) {
  ir::IRModule module = LoadModel(model);
  ir::PrintOptions options;
  options.max_constant_bytes = full_constants ? -1 : 64;
  std::cout << ir::PrintModule(module, options);
  return 0;
}

struct InterpretOptions {
  std::string inputs_dir, check_dir, outputs_dir, function = "main";
  uint64_t seed = 0;
  double tolerance = 1e-4;
};

int Interpret(const ModelOptions& model, const InterpretOptions& options) {
  ir::IRModule module = LoadModel(model);
  const ir::GraphFunction& fn = module.Get(options.function);
  std::vector<ir::Tensor> inputs =
      options.inputs_dir.empty() ? backends::RandomInputs(fn, options.seed)
                                 : frontend::ReadTensorProtoDirectory(options.inputs_dir, "input");
  fmt::print("inputs ({}):\n", options.inputs_dir.empty()
                                   ? fmt::format("random, seed {}", options.seed)
                                   : options.inputs_dir);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = i < fn.params.size() ? fn.node(fn.params[i]).name : "?";
    fmt::print("  {} %{}: {}\n", i, name, ir::ToString(inputs[i].type()));
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<ir::Tensor> outputs = backends::RunReference(fn, inputs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("reference interpreter: {:.3f} s\noutputs:\n", seconds);
  for (size_t i = 0; i < outputs.size(); ++i) fmt::print("  {}: {}\n", i, Summarize(outputs[i]));

  if (!options.outputs_dir.empty()) {
    fs::create_directories(options.outputs_dir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = (fs::path(options.outputs_dir) / fmt::format("output_{}.pb", i)).string();
      frontend::WriteTensorProtoFile(outputs[i], path);
    }
    fmt::print("wrote {} outputs to {}\n", outputs.size(), options.outputs_dir);
  }
  if (options.check_dir.empty()) return 0;
  std::vector<ir::Tensor> expected = frontend::ReadTensorProtoDirectory(options.check_dir, "output");
  if (expected.size() != outputs.size()) {
    fmt::print("check FAILED: {} outputs but {} expected\n", outputs.size(), expected.size());
    return 1;
  }
  bool ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].shape() != expected[i].shape()) {
      fmt::print("check output {}: FAILED, shape {} but expected {}\n", i,
                 ir::ShapeToString(outputs[i].shape()), ir::ShapeToString(expected[i].shape()));
      ok = false;
      continue;
    }
    double error = ir::RelativeError(outputs[i], expected[i]);
    bool pass = error <= options.tolerance;
    ok = ok && pass;
    fmt::print("check output {}: relative error {:.3g} (tolerance {:.3g}) {}\n", i, error,
               options.tolerance, pass ? "ok" : "FAILED");
  }
  return ok ? 0 : 1;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"tandem: tunes graph-level and kernel-level decisions of deep-learning models "
               "jointly"};
  app.require_subcommand(1);

  ModelOptions show_model;
  bool full_constants = false;
  CLI::App* show = app.add_subcommand("show", "print the graph IR of a model");
  AddModelOptions(show, show_model);
  show->add_flag("--full-constants", full_constants,
                 "print every constant's data (the text then parses back exactly)");

  ModelOptions interpret_model;
  InterpretOptions interpret_options;
  CLI::App* interpret =
      app.add_subcommand("interpret", "run a model on the reference interpreter");
  AddModelOptions(interpret, interpret_model);
  interpret->add_option("--inputs", interpret_options.inputs_dir,
                        "directory with input_0.pb, input_1.pb, ... (ONNX TensorProto); random "
                        "inputs when absent");
  interpret->add_option("--check", interpret_options.check_dir,
                        "directory with the expected output_0.pb, ...; exit status 1 on mismatch");
  interpret->add_option("--outputs", interpret_options.outputs_dir,
                        "directory to write output_0.pb, ... to");
  interpret->add_option("--seed", interpret_options.seed, "seed for random inputs");
  interpret->add_option("--tolerance", interpret_options.tolerance,
                        "largest accepted relative error (L2 norm) for --check");
  interpret->add_option("--function", interpret_options.function, "graph function to run");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*show) return Show(show_model, full_constants);
    if (*interpret) return Interpret(interpret_model, interpret_options);
  } catch (const ir::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tandem::tools

int main(int argc, char** argv) { return tandem::tools::Main(argc, argv); }
