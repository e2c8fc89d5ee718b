// BuildDynamicModel and AddDynamicOptions: `--dynamic` and `--buckets` of `tandem run`,
// `tandem compile` and `tandem tune` (whose tuning per bucket is RunTuneDynamic in
// tune_command.cc). A model is built once per bucket (by default of its first symbolic
// dimension's range, or a grid of several symbols' buckets: backends/runtime/
// bucketed_executable.h); the kernels take
// their schedules from a trace file of `tandem tune --dynamic`, from the tuning database, or the
// defaults.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <ranges>
#include <set>

#include "ir/error.h"
#include "ir/structural.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "pipelines/pipeline_registry.h"
#include "tools/commands.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/search/dynamic_bucket_trace.h"

namespace tandem::tools {

namespace fs = std::filesystem;
using kernels::ToString;

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The graph part of `pipeline_text`: the passes before its last one, which must be Legalize or,
// when the kernels' schedules come from a database or a trace (`with_schedules`), TuneKernels
// (tuned per bucket by `tandem tune --dynamic`).
std::string GraphPart(const std::string& pipeline_text, bool with_schedules) {
  auto [head, last] = pipelines::SplitLastPass(pipeline_text);
  if (pipelines::IsPass(last, "TuneKernels") && !head.empty()) {
    if (with_schedules) return head;
    throw ir::Error(
        "a dynamic build does not tune inside: the pipeline ends with TuneKernels, whose "
        "schedules `tandem tune --dynamic` records per bucket; give --db with its records or "
        "--trace with its trace file, or use a pipeline that ends with Legalize");
  }
  return pipelines::WithoutFinalLegalize(pipeline_text);
}

// The buckets and schedules recorded in the trace file `path`, checked against the ranges (and
// the buckets of the first, when given) and the model.
std::vector<tuning::DynamicBucketDecision> BucketsFromTrace(
    const passes::TraceFile& file, const std::string& path, const kernels::DynamicRanges& ranges,
    const std::vector<std::string>& buckets_texts, const ModelOptions& model) {
  if (!tuning::IsDynamicBucketTrace(file.trace)) {
    throw ir::Error(fmt::format(
        "the trace file {} holds the decisions for one size (`tandem tune` without --dynamic); "
        "a dynamic build takes the trace of `tandem tune --dynamic`",
        path));
  }
  std::vector<tuning::DynamicBucketDecision> decisions = tuning::ReadDynamicBucketTrace(file.trace);
  // The recorded buckets, and the whole ranges they split.
  std::vector<kernels::DynamicRanges> recorded_grid = tuning::GridOf(decisions);
  kernels::DynamicRanges recorded = kernels::CheckDynamicBucketGrid(recorded_grid);
  // "32,128" when the buckets split the first symbol only, else "height=128,224 width=224".
  auto text = [&](const std::vector<kernels::DynamicRanges>& grid) {
    std::vector<std::string> parts;
    bool others_split = false;
    for (size_t k = 0; k < ranges.size(); ++k) {
      std::set<int64_t> bounds;
      for (const kernels::DynamicRanges& bucket : grid) {
        if (k < bucket.size()) bounds.insert(bucket[k].bound);
      }
      others_split = others_split || (k > 0 && bounds.size() > 1);
      parts.push_back(fmt::format("{}", fmt::join(bounds, ",")));
    }
    if (!others_split) return parts.front();
    for (size_t k = 0; k < ranges.size(); ++k) parts[k] = ranges[k].symbol + "=" + parts[k];
    return fmt::format("{}", fmt::join(parts, " "));
  };
  if (recorded != ranges ||
      (!buckets_texts.empty() &&
       kernels::ParseDynamicBucketGrid(buckets_texts, ranges) != recorded_grid)) {
    throw ir::Error(fmt::format(
        "the trace file {} was recorded for {} with the buckets {}; --dynamic asks for {}{}", path,
        ToString(recorded), text(recorded_grid), ToString(ranges),
        buckets_texts.empty()
            ? std::string()
            : " with the buckets " + text(kernels::ParseDynamicBucketGrid(buckets_texts, ranges))));
  }
  std::vector<int64_t> bounds = kernels::BoundsOf(ranges);
  std::string hash =
      ir::HashToHex(ir::StructuralHash(LoadModel(model, kernels::SymbolSizes(ranges, bounds))));
  if (hash != file.model_hash) {
    throw ir::Error(fmt::format(
        "the trace file {} was recorded on another model ({}, hash {} at {}); this one has "
        "hash {}",
        path, file.model, file.model_hash, kernels::SizesText(ranges, bounds), hash));
  }
  return decisions;
}

}  // namespace

kernels::DynamicRanges ParseDynamicOptions(const DynamicOptions& options) {
  kernels::DynamicRanges ranges;
  for (const std::string& text : options.ranges) {
    ranges.push_back(kernels::ParseDynamicRange(text));
  }
  kernels::CheckDynamicRanges(ranges);
  return ranges;
}

void AddDynamicOptions(CLI::App* command, DynamicOptions& options) {
  command
      ->add_option("--dynamic", options.ranges,
                   "SYMBOL=MIN:MAX: build once for every size of the model's symbolic dimension "
                   "SYMBOL in the range, run at the size the inputs have; repeat it for several "
                   "symbols (--dynamic batch=1:8 --dynamic seq=1:128). The pipeline must end "
                   "with Legalize; with `tandem tune`, with TuneKernels")
      ->allow_extra_args(false);
  command->add_option("--buckets", options.buckets,
                      "with --dynamic: B1,B2,...,MAX splits the range of the first --dynamic "
                      "symbol into buckets [MIN, B1], [B1+1, B2], ..., each built (and tuned) at "
                      "its own bound; a run goes to the bucket holding its size. SYMBOL=B1,... "
                      "splits that symbol's range; repeated for several symbols, the buckets are "
                      "every combination (--buckets height=128,224 --buckets width=128,224)");
}

DynamicModel BuildDynamicModel(const ModelOptions& model, const PipelineOptions& pipeline,
                               const DynamicOptions& dynamic, const std::string& records_target) {
  // 1. The ranges, the buckets, and where the schedules come from.
  kernels::DynamicRanges ranges = ParseDynamicOptions(dynamic);
  if (fs::path(model.path).extension() != ".onnx") {
    throw ir::Error("--dynamic needs an ONNX model (its symbolic dimensions name the symbol)");
  }
  DynamicModel result;
  std::vector<tuning::DynamicBucketDecision> decisions;
  passes::PassContext context;  // holds the tuning session when --db is given
  ir::Target target;
  std::string descriptor;
  bool from_trace = !pipeline.trace.empty();
  if (from_trace) {
    passes::TraceFile file = passes::ReadTraceFile(pipeline.trace);
    decisions = BucketsFromTrace(file, pipeline.trace, ranges, dynamic.buckets, model);
    result.pipeline = file.pipeline;
    descriptor = file.target;
    target = tuning::TargetOfDescriptor(file.target);
    std::cerr << fmt::format("replaying the {} buckets of {} (pipeline {})\n", decisions.size(),
                             pipeline.trace, file.pipeline);
  } else {
    std::shared_ptr<passes::TimingInstrument> timing;
    result.pipeline = passes::PrintPipeline(*PreparePipeline(pipeline, context, timing));
    target = context.target;
    if (context.tuning) {
      descriptor = records_target.empty() ? context.tuning->target_descriptor() : records_target;
    }
    for (const kernels::DynamicRanges& bucket :
         kernels::ParseDynamicBucketGrid(dynamic.buckets, ranges)) {
      decisions.push_back({bucket.front(), {}, {bucket.begin() + 1, bucket.end()}});
    }
  }
  result.target = descriptor;

  // 2. The graph part of the pipeline, run at each size the builds ask for (without the
  //    database: only the kernels take from it).
  PipelineOptions graph_part = pipeline;
  graph_part.database.clear();
  graph_part.trace.clear();
  graph_part.text = GraphPart(result.pipeline, from_trace || context.tuning != nullptr);
  backends::DynamicModuleSource source{
      ranges, [&](const std::vector<int64_t>& sizes) {
        return RunPipeline(LoadModel(model, kernels::SymbolSizes(ranges, sizes)), graph_part);
      }};

  // 3. One build per bucket, each with its schedules: the trace's, or the database's best
  //    (what each bucket took is kept for the trace).
  auto start = std::chrono::steady_clock::now();
  std::vector<kernels::DynamicRanges> buckets = tuning::GridOf(decisions);
  std::vector<std::shared_ptr<tuning::HistoryBestStats>> stats;
  result.executable = backends::BuildBucketed(source, buckets, [&](const kernels::DynamicRanges&) {
    tuning::DynamicBucketDecision& bucket = decisions[stats.size()];
    stats.push_back(std::make_shared<tuning::HistoryBestStats>());
    backends::BuildOptions build = backends::BuildOptionsFor(target);
    if (from_trace) {
      build.legalize.schedule_provider =
          tuning::TraceMapProvider(bucket.schedules, tuning::SearchSpaceFor(target, descriptor));
    } else if (context.tuning) {
      build.legalize.schedule_provider =
          tuning::HistoryBestProvider(context.tuning->shared_database(), descriptor,
                                      tuning::SearchSpaceFor(target, descriptor), stats.back());
    }
    return build;
  });
  for (size_t b = 0; b < decisions.size() && context.tuning; ++b) {
    decisions[b].schedules = stats[b]->taken;
    std::cerr << fmt::format(
        "bucket {}: kernels from {}: {} with a recorded schedule, {} default\n",
        ToString(buckets[b]), pipeline.database, stats[b]->from_database,
        stats[b]->default_schedule);
    std::string note = tuning::NotReplayedNote(*stats[b]);
    if (!note.empty()) std::cerr << "warning: " << note << "\n";
  }
  result.trace = tuning::DynamicBucketTrace(decisions);
  std::cerr << fmt::format(
      "dynamic build for {} ({} bucket{}: bounds {}): {:.2f} s\n  inputs: {}\n  outputs: {}\n",
      ToString(ranges), decisions.size(), decisions.size() == 1 ? "" : "s",
      fmt::join(buckets | std::views::transform([](const kernels::DynamicRanges& bucket) {
                  return fmt::format("{}",
                                     fmt::join(bucket | std::views::transform(
                                                            [](const auto& r) { return r.bound; }),
                                               "x"));
                }),
                ","),
      SecondsSince(start), fmt::join(result.executable->InputSignatures(), ", "),
      fmt::join(result.executable->OutputSignatures(), ", "));
  return result;
}

}  // namespace tandem::tools
