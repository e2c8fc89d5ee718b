// tandem_dynamic_bench: one dynamic build of an ONNX model (every size of one or more symbolic
// axes within their ranges) against a build specialized to each size, and external engines, in
// one run.
//
// For example (one command line, with D=examples/models/bert_tokens):
//   build/bench/tandem_dynamic_bench --model $D/model.onnx --symbol batch=1
//       --dynamic sequence=1:128 --data 16=DIR16 --data 77=DIR77 --data 128=DIR128
//       --external "onnxruntime=PY bench/engine_latency.py --serve --engine onnxruntime
//                   --test-data test_data_seq{n} $D"
// With several --dynamic symbols a size names one per symbol, in their order: --dynamic
// height=64:224 --dynamic width=64:224 --data 97x113=DIR ({n} is then "97x113").
//
// Steps:
//   1. builds the model once for the range (the graph part of --pipeline, then dynamic lowering:
//      backends/runtime/dynamic_executable.h), reporting the build time;
//   2. per size: reads the inputs (input_*.pb) and outputs of its data folder, builds the model
//      imported at that size with the whole pipeline, checks both builds' outputs against the
//      stored ones, and times both and the external engines (their command with {n} replaced by
//      the size) in interleaved turns (bench/interleaved_timing.h);
//   3. prints one table: size, static and dynamic latency, their ratio, each engine's latency
//      (with --buckets, also a build by those buckets, timed in the same turns).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "backends/runtime/bucketed_executable.h"
#include "backends/runtime/thread_pool.h"
#include "bench/external_contender.h"
#include "bench/interleaved_timing.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "ir/file_read.h"
#include "ir/target.h"
#include "kernels/dynamic_extent.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"

namespace tandem {
namespace {

struct Options {
  std::string model;
  std::vector<std::string> dynamic;
  std::vector<std::string> buckets;
  std::vector<std::string> data;
  std::vector<std::string> externals;
  std::vector<std::string> bound_symbols;
  std::string pipeline = "default_heuristic";
  std::string target = "llvm";
  int threads = 2;
  int passes = 5;
  double settle = 0.25;
};

// One row of the table: a size of every dynamic symbol, in their order, and its data folder.
struct Size {
  std::vector<int64_t> n;
  std::string text;  // "16", or "97x113" for two symbols
  std::string folder;
};

// "97x113" (one size per symbol of `ranges`) as sizes; Error naming the text otherwise.
std::vector<int64_t> ParseSizes(const std::string& text, const kernels::DynamicRanges& ranges) {
  std::vector<int64_t> sizes;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, 'x')) {
    try {
      size_t used = 0;
      sizes.push_back(std::stoll(part, &used));
      if (used != part.size()) sizes.clear();
    } catch (const std::exception&) {
      sizes.clear();
    }
    if (sizes.empty()) break;
  }
  if (sizes.size() != ranges.size()) {
    throw ir::Error(fmt::format("--data size '{}' must give {} size(s) ({}), separated by 'x'",
                                text, ranges.size(), fmt::join(kernels::SymbolsOf(ranges), ", ")));
  }
  return sizes;
}

ir::IRModule Import(const std::string& bytes, const std::string& path,
                    std::map<std::string, int64_t> symbols, const kernels::DynamicRanges& ranges,
                    const std::vector<int64_t>& n) {
  frontend::OnnxImportOptions options;
  options.symbols = std::move(symbols);
  for (const auto& [symbol, size] : kernels::SymbolSizes(ranges, n)) options.symbols[symbol] = size;
  return frontend::ImportOnnxModel(bytes, path, options);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Checks `outputs` against the stored ones (relative error at most 1e-4).
void Check(const std::vector<ir::Tensor>& outputs, const std::vector<ir::Tensor>& stored,
           const std::string& what) {
  if (outputs.size() != stored.size()) {
    throw ir::Error(fmt::format("{}: {} outputs, {} stored", what, outputs.size(), stored.size()));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    double error = ir::RelativeError(outputs[k], stored[k]);
    if (!(error <= 1e-4)) {
      throw ir::Error(fmt::format("{}: output {} differs from the stored one (relative error {})",
                                  what, k, error));
    }
  }
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"tandem_dynamic_bench: one dynamic build against per-size builds and engines"};
  app.add_option("--model", o.model, "ONNX model")->required();
  app.add_option("--dynamic", o.dynamic,
                 "SYMBOL=MIN:MAX: the model's symbolic dimension (dim_param) made dynamic, and "
                 "its range (repeatable: one build for every combination of sizes)")
      ->required();
  app.add_option("--buckets", o.buckets,
                 "[SYMBOL=]B1,...,MAX: also time a build by these buckets of the first (or the "
                 "named) --dynamic symbol beside the single dynamic build; repeated for several "
                 "symbols, their grid (backends/runtime/bucketed_executable.h)");
  app.add_option("--data", o.data,
                 "SIZE=FOLDER: inputs (input_*.pb) and outputs (output_*.pb) at that size, one "
                 "per --dynamic symbol separated by 'x' (97x113) (repeatable; one table row each)")
      ->required();
  app.add_option("--external", o.externals,
                 "NAME=COMMAND: an engine speaking bench/external_contender.h's protocol, {n} in "
                 "COMMAND replaced by the size as --data gives it (repeatable)");
  app.add_option("--symbol", o.bound_symbols,
                 "NAME=SIZE: another symbolic dimension, bound to one size (repeatable)");
  app.add_option("--pipeline", o.pipeline, "registered pipeline ending with Legalize");
  app.add_option(
         "--target", o.target,
         "target of every build, e.g. \"llvm -cpu=znver3\" for AVX2 code on an AVX-512 host")
      ->capture_default_str();
  app.add_option("--threads", o.threads, "threads for parallel loops");
  app.add_option("--passes", o.passes, "timing passes (turns)");
  app.add_option("--settle", o.settle, "seconds to pause after each block when --external is set");
  CLI11_PARSE(app, argc, argv);
  backends::ThreadPool::Global().SetNumThreads(o.threads);
  const ir::Target target = ir::ParseTarget(o.target);

  kernels::DynamicRanges ranges;
  for (const std::string& spec : o.dynamic) ranges.push_back(kernels::ParseDynamicRange(spec));
  kernels::CheckDynamicRanges(ranges);
  std::string symbols_text = fmt::format("{}", fmt::join(kernels::SymbolsOf(ranges), " x "));
  std::vector<Size> sizes;
  for (const std::string& spec : o.data) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos) {
      throw ir::Error(fmt::format("--data '{}' is not SIZE=FOLDER", spec));
    }
    std::string text = spec.substr(0, equals);
    sizes.push_back({ParseSizes(text, ranges), text, spec.substr(equals + 1)});
  }
  std::vector<std::pair<std::string, std::string>> externals;
  for (const std::string& spec : o.externals) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos) {
      throw ir::Error(fmt::format("--external '{}' is not NAME=COMMAND", spec));
    }
    externals.emplace_back(spec.substr(0, equals), spec.substr(equals + 1));
  }
  const pipelines::PipelineRegistry& registry = pipelines::PipelineRegistry::Global();
  std::string text = registry.Get(o.pipeline).text;
  std::string graph_part = pipelines::WithoutFinalLegalize(text);
  std::string bytes = ir::ReadRegularFile(o.model, "model");
  std::map<std::string, int64_t> bound_symbols;
  for (const std::string& spec : o.bound_symbols) {
    frontend::ParseSymbolBinding(spec, "--symbol", bound_symbols);
  }

  // 1. The dynamic build.
  auto start = std::chrono::steady_clock::now();
  backends::DynamicModuleSource source;
  source.ranges = ranges;
  source.make = [&](const std::vector<int64_t>& n) {
    passes::PassContext context;
    context.target = target;
    return context.RunPipeline(*passes::ParsePipeline(graph_part),
                               Import(bytes, o.model, bound_symbols, ranges, n));
  };
  std::unique_ptr<backends::DynamicExecutable> dynamic =
      backends::BuildDynamic(source, backends::BuildOptionsFor(target));
  double dynamic_build = Seconds(start);
  std::cerr << fmt::format("dynamic build for {}: {:.1f} s\n", kernels::ToString(ranges),
                           dynamic_build);
  std::unique_ptr<backends::BucketedExecutable> bucketed;
  if (!o.buckets.empty()) {
    start = std::chrono::steady_clock::now();
    bucketed = backends::BuildBucketed(
        source, kernels::ParseDynamicBucketGrid(o.buckets, ranges),
        [&](const kernels::DynamicRanges&) { return backends::BuildOptionsFor(target); });
    std::cerr << fmt::format("build by buckets {}: {:.1f} s\n", fmt::join(o.buckets, " "),
                             Seconds(start));
  }

  // 2. Per size: the specialized build, checks, turns.
  std::vector<std::string> header = {symbols_text, "static ms", "dynamic ms", "dynamic/static",
                                     "static build s"};
  if (bucketed) {
    header.insert(header.begin() + 4, {"bucketed ms", "bucketed/static"});
  }
  for (const auto& [name, command] : externals) header.push_back(name + " ms");
  std::vector<std::vector<std::string>> rows;
  for (const Size& size : sizes) {
    std::vector<ir::Tensor> inputs = frontend::ReadTensorProtoDirectory(size.folder, "input");
    std::vector<ir::Tensor> stored = frontend::ReadTensorProtoDirectory(size.folder, "output");
    start = std::chrono::steady_clock::now();
    passes::PassContext context;
    context.target = target;
    std::unique_ptr<backends::Executable> specialized =
        backends::Build(context.RunPipeline(*passes::ParsePipeline(text),
                                            Import(bytes, o.model, bound_symbols, ranges, size.n)),
                        backends::BuildOptionsFor(target));
    double static_build = Seconds(start);
    std::string at = kernels::SizesText(ranges, size.n);
    if (dynamic->SizesOf(inputs) != size.n) {
      throw ir::Error(fmt::format("the inputs in {} are not of {}", size.folder, at));
    }
    Check(specialized->Run(inputs), stored, fmt::format("static build at {}", at));
    Check(dynamic->Run(inputs), stored, fmt::format("dynamic build at {}", at));
    if (bucketed) Check(bucketed->Run(inputs), stored, fmt::format("buckets at {}", at));
    std::vector<std::unique_ptr<bench::ExternalContender>> engines;
    for (const auto& [name, command] : externals) {
      engines.push_back(
          std::make_unique<bench::ExternalContender>(name, Replace(command, "{n}", size.text)));
    }
    // Contenders: static, dynamic, the engines, then the bucketed build.
    std::vector<bench::Contender> contenders(2 + engines.size() + (bucketed ? 1 : 0));
    contenders[0].run = [&] { specialized->Run(inputs); };
    contenders[1].run = [&] { dynamic->Run(inputs); };
    for (size_t e = 0; e < engines.size(); ++e) {
      contenders[2 + e].run_block = [&, e](int n) { return engines[e]->RunBlock(n); };
    }
    if (bucketed) contenders.back().run = [&] { bucketed->Run(inputs); };
    std::vector<bench::Contender*> turns;
    for (bench::Contender& c : contenders) turns.push_back(&c);
    bench::MeasureInTurns(turns,
                          {.passes = o.passes, .settle_seconds = engines.empty() ? 0 : o.settle});
    double static_ms = contenders[0].best() * 1e3;
    double dynamic_ms = contenders[1].best() * 1e3;
    std::vector<std::string> row = {
        size.text, fmt::format("{:.3f}", static_ms), fmt::format("{:.3f}", dynamic_ms),
        fmt::format("{:.2f}", dynamic_ms / static_ms), fmt::format("{:.1f}", static_build)};
    if (bucketed) {
      double bucketed_ms = contenders.back().best() * 1e3;
      row.insert(row.begin() + 4, {fmt::format("{:.3f}", bucketed_ms),
                                   fmt::format("{:.2f}", bucketed_ms / static_ms)});
    }
    for (size_t e = 0; e < engines.size(); ++e) {
      row.push_back(fmt::format("{:.3f}", contenders[2 + e].best() * 1e3));
    }
    rows.push_back(std::move(row));
    std::cerr << fmt::format("{} done (load {})\n", at, bench::LoadAverage());
  }

  // 3. The table.
  std::cout << fmt::format(
      "dynamic build: {}, pipeline {}, {} threads, built once in {:.1f} s; outputs checked "
      "against the stored ones\n\n",
      kernels::ToString(ranges), o.pipeline, o.threads, dynamic_build);
  std::cout << "| " << fmt::format("{}", fmt::join(header, " | ")) << " |\n|";
  for (size_t k = 0; k < header.size(); ++k) std::cout << (k == 0 ? " --- |" : " ---: |");
  std::cout << "\n";
  for (const auto& row : rows)
    std::cout << "| " << fmt::format("{}", fmt::join(row, " | ")) << " |\n";
  return 0;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  try {
    return tandem::Main(argc, argv);
  } catch (const tandem::ir::Error& e) {
    std::cerr << "tandem_dynamic_bench: " << e.what() << "\n";
    return 1;
  }
}
