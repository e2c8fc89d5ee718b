// The tuning report of a real tuning run renders in a real browser: a small model is tuned with
// default_tuning (16 kernel trials) into a SQLite database, its TuningRun committed, the report
// written and opened by headless Chromium (Debian package `chromium`), which must produce a
// screenshot of the requested size that is not blank and a DOM with the table, charts and
// folding tree. Skips when Chromium is not installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <vector>

#include <unistd.h>

#include "frontend/model_builders.h"
#include "passes/pipeline_text.h"
#include "passes/pipeline_trace.h"
#include "pipelines/pipeline_registry.h"
#include "report/tuning_report.h"
#include "tests/report/chromium.h"
#include "tuning/measure/runner.h"
#include "tuning/session/tuning_run.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using testing::FindChromium;
using testing::InspectPng;
using testing::PngStats;
using testing::ReadFile;

// Tunes a small ResNet block with default_tuning under a budget of 16 measurements into the
// SQLite database at `path` and commits the run as `tandem tune` does.
void TuneIntoDatabase(const std::string& path) {
  ir::IRModule model =
      frontend::ResNetBasicBlock({.batch = 1, .channels = 8, .height = 8, .width = 8});
  tuning::TuningSession::Options options;
  options.measure.repeats = 3;
  options.measure.min_repeat_seconds = 5e-4;
  options.measure.timeout_seconds = 20;
  options.max_measurements = 16;
  std::shared_ptr<tuning::Database> database = tuning::OpenSqliteDatabase(path);
  passes::PassContext context;
  context.tuning = std::make_shared<tuning::TuningSession>(
      context.target, database, std::make_shared<tuning::LocalBuilder>(),
      std::make_shared<tuning::ProcessRunner>(), options);
  tuning::TuningSession& session = *context.tuning;
  const pipelines::PipelineRegistry& registry = pipelines::PipelineRegistry::Global();
  session.EnsureReference(model);
  passes::PassContext baseline_context;
  ir::IRModule baseline =
      baseline_context.RunPipeline(*registry.Create("default_heuristic"), model);
  tuning::MeasureResult before =
      session.EvaluateModules({{baseline, {}}}, "(before)", /*charge_budget=*/false).front();

  std::string pipeline = registry.Get("default_tuning").text;
  double start = session.ElapsedSeconds();
  passes::RecordedRun recorded =
      passes::RunPipelineRecorded(*passes::ParsePipeline(pipeline), model, context);
  double tuning_seconds = session.ElapsedSeconds() - start;
  tuning::MeasureResult after =
      session.EvaluateModules({{recorded.module, {}}}, "(after)", /*charge_budget=*/false).front();
  tuning::TuningRun run = tuning::SummarizeTuningRun(session, "resnet_block<8>", "00000000000000aa",
                                                     pipeline, recorded.trace, tuning_seconds);
  run.before_seconds = before.run_seconds;
  run.after_seconds = after.run_seconds;
  run.after_error = after.error;
  tuning::CommitTuningRun(*database, run);
}

TEST(TuningReportChromium, RealRunRendersInHeadlessChromium) {
  std::optional<fs::path> chromium = FindChromium();
  if (!chromium) {
    GTEST_SKIP() << "chromium is not installed (Debian package `chromium`; scripts/setup.sh "
                    "installs it)";
  }
  fs::path dir =
      fs::temp_directory_path() / ("tandem_report_chromium_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  TuneIntoDatabase((dir / "tuning.db").string());

  std::unique_ptr<tuning::Database> database = tuning::OpenSqliteDatabase(dir / "tuning.db");
  report::ReportOptions options;
  options.source = (dir / "tuning.db").string();
  for (const pipelines::PipelineDef& pipeline : pipelines::PipelineRegistry::Global().List()) {
    options.pipeline_names.emplace(pipeline.text, pipeline.name);
  }
  std::string html = report::TuningReportHtml(*database, options);
  EXPECT_NE(html.find("<summary>default_tuning</summary>"), std::string::npos);
  EXPECT_NE(html.find("resnet_block&lt;8&gt;"), std::string::npos);
  EXPECT_NE(html.find(" scheduled"), std::string::npos);
  fs::path page = dir / "report.html";
  std::ofstream(page) << html;

  // Headless Chromium with its own profile (tests may run side by side) and a hard time limit.
  std::string common = "timeout -k 5 90 '" + chromium->string() +
                       "' --headless --no-sandbox --disable-gpu --hide-scrollbars "
                       "--user-data-dir='" +
                       (dir / "profile").string() + "' --window-size=1280,2000 ";
  fs::path png = dir / "report.png", dom = dir / "dom.html", log = dir / "chromium.log";
  std::string url = "'file://" + page.string() + "'";
  int status = std::system(
      (common + "--screenshot='" + png.string() + "' " + url + " >'" + log.string() + "' 2>&1")
          .c_str());
  ASSERT_EQ(status, 0) << ReadFile(log);
  ASSERT_TRUE(fs::exists(png)) << ReadFile(log);
  PngStats stats = InspectPng(ReadFile(png));
  EXPECT_EQ(stats.width, 1280u);
  EXPECT_EQ(stats.height, 2000u);
  RecordProperty("png_bytes", std::to_string(fs::file_size(png)));
  std::cout << "screenshot: " << png << ", " << fs::file_size(png) << " bytes, " << stats.width
            << "x" << stats.height;
  if (stats.decoded) {
    std::cout << ", " << stats.distinct_colors << " colors, " << stats.non_white_fraction * 100
              << "% non-white";
    EXPECT_GE(stats.distinct_colors, 16u);  // text, chart lines, table borders
    EXPECT_GT(stats.non_white_fraction, 0.01);
  }
  std::cout << "\n";

  status = std::system(
      (common + "--dump-dom " + url + " >'" + dom.string() + "' 2>'" + log.string() + "'").c_str());
  ASSERT_EQ(status, 0) << ReadFile(log);
  std::string rendered = ReadFile(dom);
  for (const char* element :
       {"<table class=\"runs\"", "<svg", "<polyline", "<details", "<summary>", "class=\"tree\""}) {
    EXPECT_NE(rendered.find(element), std::string::npos) << element;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace tandem
