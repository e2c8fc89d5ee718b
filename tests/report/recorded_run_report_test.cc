// The tuning report of a real `joint` run on each shared model (../shared/models), from the
// committed pipeline fixture of that run (tests/pipelines/data/fixtures: every measurement the
// run took): the fixture is replayed (the pipeline runs again, every evaluation answered from the
// recorded measurements, so the run's evaluation log and kernel searches are today's), the
// replayed run is committed beside the recorded measurements, and the report is built from them.
//   - Every point of the graph-level best-latency curve is a recorded end-to-end latency: the
//     median of a record of a whole module of the model (the model's signature, not a piece).
//   - Every kernel search's weighted curve never rises.
//   - Plotted points picked at random name records that hold exactly their value.
//   - Rendered by headless Chromium (skipped without it), the DOM's end-to-end chart holds only
//     recorded end-to-end latencies. TANDEM_REPORT_SCREENSHOT_DIR=DIR keeps a screenshot per
//     model there (docs/images/ was made so).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "backends/onednn/onednn_isa.h"
#include "backends/target/resolved_target.h"
#include "frontend/onnx_importer.h"
#include "pipelines/pipeline_fixture.h"
#include "pipelines/pipeline_registry.h"
#include "report/run_facts.h"
#include "report/tuning_report.h"
#include "tests/report/chromium.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {
namespace {

namespace fs = std::filesystem;

// The fixture's measurements without its stored run (the replayed run replaces it).
std::unique_ptr<tuning::Database> MeasurementsOf(const fs::path& fixture) {
  std::ifstream in(fixture);
  std::stringstream kept;
  std::set<std::string> runs;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json object = nlohmann::json::parse(line);
    if (object["type"] == "workload" && object["kind"] == "run") {
      runs.insert(object["hash"].get<std::string>());
      continue;
    }
    if (object["type"] == "record" && runs.count(object["workload_hash"].get<std::string>())) {
      continue;
    }
    kept << line << "\n";
  }
  std::unique_ptr<tuning::Database> database = tuning::MakeInMemoryDatabase();
  database->ImportJsonLines(kept);
  return database;
}

std::string MainSignature(const std::string& module_text) {
  size_t at = module_text.find("graph @main(");
  return at == std::string::npos ? "" : module_text.substr(at, module_text.find('{', at) - at);
}

struct Checker {
  const tuning::Database& database;
  std::string target;
  std::string model_signature;

  // The record's median, checking that the record exists and succeeded.
  double Seconds(const RecordRef& ref) const {
    std::optional<double> seconds = RecordSeconds(database, target, ref);
    EXPECT_TRUE(seconds) << "no successful record " << ref.Text();
    return seconds.value_or(-1);
  }
  // Whether the record's workload is a whole module of the model (not a piece of it).
  bool WholeModule(const RecordRef& ref) const {
    std::optional<tuning::Workload> workload = database.GetWorkload(ref.workload_hash);
    return workload && workload->kind == "graph" &&
           workload->text.find(tuning::kReferenceKeyAttr) == std::string::npos &&
           MainSignature(workload->text) == model_signature;
  }
};

RecordRef ParseRef(const std::string& text) {
  size_t slash = text.find('/');
  return {text.substr(0, slash), slash == std::string::npos ? "" : text.substr(slash + 1)};
}

// (data-seconds, data-record) of every element in `html` that has both.
std::vector<std::pair<double, RecordRef>> PlottedValues(const std::string& html) {
  static const std::regex pattern("data-seconds=\"([^\"]+)\" data-record=\"([^\"]*)\"");
  std::vector<std::pair<double, RecordRef>> values;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    values.emplace_back(std::strtod((*it)[1].str().c_str(), nullptr), ParseRef((*it)[2].str()));
  }
  return values;
}

// The <svg> element with data-chart="kind" ("" when none).
std::string Chart(const std::string& html, const std::string& kind) {
  size_t at = html.find("data-chart=\"" + kind + "\"");
  if (at == std::string::npos) return "";
  size_t start = html.rfind("<svg", at);
  return html.substr(start, html.find("</svg>", at) + 6 - start);
}

void ExpectEndToEnd(const Checker& checker, const std::string& chart) {
  std::vector<std::pair<double, RecordRef>> points = PlottedValues(chart);
  EXPECT_FALSE(points.empty());
  for (const auto& [seconds, ref] : points) {
    EXPECT_EQ(checker.Seconds(ref), seconds) << ref.Text();
    EXPECT_TRUE(checker.WholeModule(ref)) << ref.Text() << " is not a whole module of the model";
  }
}

// The lines of `fixture` as a Tandem that kept no evaluation log stored them: each run (a
// record's measured_by) without its graph_evaluations.
std::string WithoutEvaluationLog(const fs::path& fixture) {
  std::ifstream in(fixture);
  std::string lines;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record.contains("measured_by") && record["measured_by"].is_string()) {
      nlohmann::json run =
          nlohmann::json::parse(record["measured_by"].get<std::string>(), nullptr, false);
      if (run.is_object() && run.contains("graph_evaluations")) {
        run.erase("graph_evaluations");
        record["measured_by"] = run.dump();
      }
    }
    lines += record.dump() + "\n";
  }
  return lines;
}

class RecordedJointRun : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedJointRun, ReportPlotsOnlyRecordedEndToEndLatencies) {
  fs::path model_file = fs::path(TANDEM_MODELS_DIR) / GetParam() / "model.onnx";
  if (!fs::exists(model_file)) GTEST_SKIP() << "shared model " << model_file << " is not present";
  fs::path fixture =
      fs::path(TANDEM_SOURCE_DIR) / "tests/pipelines/data/fixtures" / (GetParam() + ".jsonl");
  ir::Target target = pipelines::FixtureTarget(fixture.string());
  if (!backends::MissingHostFeatures(target).empty()) {
    GTEST_SKIP() << "this machine cannot run code of the fixture's target";
  }
  std::string pinned = backends::PinnedOnednnIsa();
  if (!pinned.empty() && pinned != backends::OnednnIsaFor(target)) GTEST_SKIP();

  ir::IRModule model = frontend::ImportOnnxFile(model_file.string());
  pipelines::FixtureReplay replay = pipelines::ReplayPipelineFixture(model, fixture.string());
  std::unique_ptr<tuning::Database> database = MeasurementsOf(fixture);
  tuning::TuningRun run = replay.replayed;
  tuning::CommitTuningRun(*database, run);
  Checker checker{*database, run.target, MainSignature(tuning::GraphWorkloadText(model))};
  ASSERT_FALSE(checker.model_signature.empty());

  // Item 1 on the facts: best-so-far over whole modules only, each a recorded latency.
  RunFacts facts = CollectRunFacts(run, *database);
  ASSERT_TRUE(facts.graph.logged);
  ASSERT_FALSE(facts.graph.end_to_end.empty());
  for (const PassPoints& line : facts.graph.end_to_end) {
    for (const PlotPoint& point : line.points) {
      EXPECT_EQ(checker.Seconds(point.record), point.seconds) << line.pass;
      EXPECT_TRUE(checker.WholeModule(point.record)) << line.pass << " " << point.record.Text();
    }
  }
  for (const PassPoints& line : facts.graph.pieces) {
    for (const PlotPoint& point : line.points) {
      EXPECT_FALSE(checker.WholeModule(point.record)) << line.pass << " " << point.record.Text();
    }
  }
  // Item 2: the kernel searches' weighted curves never rise, and the last sum is the weighted
  // sum of each task's best recorded latency (its default schedule's when nothing beat it).
  for (const KernelSearchFacts& search : facts.kernel_searches) {
    ASSERT_TRUE(search.logged) << search.pass;
    for (size_t k = 1; k < search.weighted.size(); ++k) {
      EXPECT_LE(search.weighted[k].seconds, search.weighted[k - 1].seconds) << search.pass;
    }
    if (search.weighted.empty()) continue;
    double sum = 0;
    for (const KernelTaskFacts& task : search.tasks) {
      if (!task.default_schedule) continue;
      double seconds = checker.Seconds(task.default_schedule->record);
      if (task.best_point) seconds = std::min(seconds, checker.Seconds(task.best_point->record));
      sum += static_cast<double>(task.task.weight) * seconds;
    }
    EXPECT_DOUBLE_EQ(search.weighted.back().seconds, sum) << search.pass;
  }

  ReportOptions options;
  for (const pipelines::PipelineDef& pipeline : pipelines::PipelineRegistry::Global().List()) {
    options.pipeline_names.emplace(pipeline.text, pipeline.name);
  }
  std::string html = TuningReportHtml(*database, options);
  EXPECT_NE(html.find("<summary>joint</summary>"), std::string::npos);
  EXPECT_NE(html.find(run.model_hash), std::string::npos);
  ExpectEndToEnd(checker, Chart(html, "graph-end-to-end"));

  // Every number traceable: points picked at random name records holding exactly their value.
  std::vector<std::pair<double, RecordRef>> plotted = PlottedValues(html);
  ASSERT_GE(plotted.size(), 10u);
  unsigned seed = std::random_device{}();
  std::mt19937 random(seed);
  for (int pick = 0; pick < 25; ++pick) {
    const auto& [seconds, ref] = plotted[random() % plotted.size()];
    std::optional<tuning::TuningRecord> record =
        database->FindRecord(ref.workload_hash, run.target, ref.candidate_hash);
    ASSERT_TRUE(record) << "seed " << seed << ": no record " << ref.Text();
    EXPECT_EQ(record->median_seconds(), seconds) << "seed " << seed << ": " << ref.Text();
  }

  // The run as the fixture stored it reports, and so does the run as a Tandem that kept no
  // evaluation log stored it, its graph-level curve left out with the reason.
  std::unique_ptr<tuning::Database> stored = tuning::MakeInMemoryDatabase();
  std::ifstream fixture_lines(fixture);
  stored->ImportJsonLines(fixture_lines);
  std::string stored_html = TuningReportHtml(*stored, options);
  EXPECT_NE(stored_html.find("<summary>joint</summary>"), std::string::npos);
  std::unique_ptr<tuning::Database> older = tuning::MakeInMemoryDatabase();
  std::istringstream older_lines(WithoutEvaluationLog(fixture));
  older->ImportJsonLines(older_lines);
  std::string old_html = TuningReportHtml(*older, options);
  EXPECT_NE(old_html.find("recorded by an older Tandem"), std::string::npos);
  EXPECT_EQ(old_html.find("data-chart=\"graph-end-to-end\""), std::string::npos);

  std::optional<fs::path> chromium = testing::FindChromium();
  if (!chromium) GTEST_SKIP() << "chromium is not installed: the DOM was not checked";
  fs::path dir = fs::temp_directory_path() /
                 ("tandem_recorded_report_" + GetParam() + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path page = dir / "report.html", dom = dir / "dom.html", log = dir / "chromium.log";
  std::ofstream(page) << html;
  std::string common = "timeout -k 5 90 '" + chromium->string() +
                       "' --headless --no-sandbox --disable-gpu --hide-scrollbars "
                       "--user-data-dir='" +
                       (dir / "profile").string() + "' --window-size=1280,1700 ";
  std::string url = "'file://" + page.string() + "'";
  int status = std::system(
      (common + "--dump-dom " + url + " >'" + dom.string() + "' 2>'" + log.string() + "'").c_str());
  ASSERT_EQ(status, 0) << testing::ReadFile(log);
  std::string rendered = testing::ReadFile(dom);
  ExpectEndToEnd(checker, Chart(rendered, "graph-end-to-end"));
  if (!facts.kernel_searches.empty()) {
    // Sums name the record that last lowered them; it exists.
    std::string sums = Chart(rendered, "kernel-weighted");
    static const std::regex lowered("data-lowered-by=\"([^\"]*)\"");
    size_t found = 0;
    for (auto it = std::sregex_iterator(sums.begin(), sums.end(), lowered);
         it != std::sregex_iterator(); ++it, ++found) {
      EXPECT_GT(checker.Seconds(ParseRef((*it)[1].str())), 0);
    }
    EXPECT_GT(found, 0u);
  }
  if (const char* keep = std::getenv("TANDEM_REPORT_SCREENSHOT_DIR")) {
    fs::path png = fs::path(keep) / ("report_" + GetParam() + ".png");
    status = std::system(
        (common + "--screenshot='" + png.string() + "' " + url + " >'" + log.string() + "' 2>&1")
            .c_str());
    EXPECT_EQ(status, 0) << testing::ReadFile(log);
    EXPECT_EQ(testing::InspectPng(testing::ReadFile(png)).width, 1280u);
  }
  if (!HasFailure()) fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, RecordedJointRun,
                         ::testing::Values("resnet18", "mobilenet_v2", "bert_small"));

}  // namespace
}  // namespace tandem::report
