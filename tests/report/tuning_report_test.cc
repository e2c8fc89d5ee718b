// The tuning report's HTML on a hand-made database: the runs table, an SVG line chart per curve,
// the decision tree with nested passes beneath the tuning pass whose candidate they belong to,
// the evaluation counts, escaping of every text, and the page of an empty database.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "report/decision_tree_html.h"
#include "report/html_text.h"
#include "report/svg_line_chart.h"
#include "report/tuning_report.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {
namespace {

using tuning::Database;
using tuning::MakeInMemoryDatabase;
using tuning::MeasureResult;
using tuning::NowUtc;
using tuning::TuningDecision;
using tuning::TuningRecord;
using tuning::TuningRun;
using tuning::Workload;

constexpr const char* kTarget = "llvm|cpu=test<cpu>|schema=1";
constexpr const char* kKernelHash = "00000000000abc12";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// How many <ul> elements are open at the first occurrence of `what`.
int ListDepthAt(const std::string& html, const std::string& what) {
  size_t at = html.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  std::string before = html.substr(0, at);
  return static_cast<int>(Count(before, "<ul")) - static_cast<int>(Count(before, "</ul>"));
}

ir::Instruction Pass(const std::string& kind, const std::string& decision,
                     const std::string& text = "") {
  ir::Instruction instruction;
  instruction.kind = kind;
  instruction.attrs.Set("pass", text.empty() ? kind : text);
  instruction.decision = ir::AttrValue(decision);
  return instruction;
}

ir::Trace ScheduleTrace() {
  ir::Instruction split;
  split.kind = "sample_perfect_tile";
  split.inputs = {"l0"};
  split.outputs = {"v0", "v1"};
  split.decision = ir::AttrValue(std::vector<int64_t>{4, 8});
  return ir::Trace({split});
}

TuningRun MakeRun() {
  TuningRun run;
  run.model = "tiny<cnn>";
  run.model_hash = "0123456789abcdef";
  run.pipeline = "InferType, TuneLayout(eval=[FuseOps, TuneKernels(trials=8)]), Legalize";
  run.target = kTarget;
  run.trial_budget = 32;
  run.seed = 7;
  ir::Instruction layout = Pass("TuneLayout", "NCHW16c");
  layout.attrs.Set("considered", std::string("NCHW,NCHW16c"));
  nlohmann::json schedules = {{kKernelHash, ScheduleTrace().ToJson()}};
  ir::Instruction kernels = Pass("TuneKernels", schedules.dump(), "TuneKernels(trials=8)");
  run.trace = ir::Trace({Pass("InferType", "apply"), layout, Pass("FuseOps", "apply"), kernels,
                         Pass("Legalize", "apply")});
  TuningDecision decision;
  decision.pass = "TuneLayout(eval=[FuseOps, TuneKernels(trials=8)])";
  decision.trace = ir::Trace({layout, Pass("FuseOps", "apply"), kernels});
  decision.result = MeasureResult::FromRunSeconds({1.1e-3, 1.0e-3, 1.2e-3}, 0);
  decision.baseline_seconds = 2e-3;
  run.decisions.push_back(decision);
  run.counts["TuneLayout(eval=[FuseOps, TuneKernels(trials=8)])"] = {4, 1, 3, 1, 0, 1.5, 0.5};
  run.counts["TuneKernels(trials=8)"] = {16, 0, 16, 2, 5, 3.0, 1.0};
  run.kernel_curves.push_back({"TuneKernels(trials=8)",
                               1,
                               {{4, 3e-3, 1, true}, {8, 2e-3, 2, true}, {12, 1.5e-3, 3, true}}});
  run.graph_curve = {{decision.pass, 1, 2e-3, 0.5}, {decision.pass, 3, 1e-3, 1.5}};
  run.before_seconds = {2e-3, 2e-3};
  run.after_seconds = {1e-3, 1e-3};
  run.tuning_seconds = 12.5;
  run.measured_at = "2026-11-24T09:00:00Z";
  return run;
}

std::unique_ptr<Database> MakeDatabase() {
  std::unique_ptr<Database> db = MakeInMemoryDatabase();
  CommitTuningRun(*db, MakeRun());
  db->CommitWorkload({kKernelHash, "kernel", "kernel @fused_conv<2d>(A: f32[4]) {\n}\n"});
  double seconds[] = {5e-3, 4e-3, -1, 4.5e-3, 2e-3};
  for (double s : seconds) {
    TuningRecord record;
    record.workload_hash = kKernelHash;
    record.target = kTarget;
    record.trace_json = ScheduleTrace().ToJson();
    record.measured_at = NowUtc();
    if (s > 0)
      record.run_seconds = {s};
    else
      record.error = "crashed: <signal 11>";
    db->CommitRecord(record);
  }
  db->CommitWorkload({"1111111111111111", "kernel", "kernel @other(A: f32[4]) {\n}\n"});
  return db;
}

TEST(TuningReport, TableRowPerRunWithLatenciesAndTarget) {
  std::string html = TuningReportHtml(*MakeDatabase(), {});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<table class=\"runs\">"), std::string::npos);
  EXPECT_EQ(Count(html, "<a href=\"#run-"), 1u);
  EXPECT_NE(html.find("tiny&lt;cnn&gt;"), std::string::npos);
  EXPECT_NE(html.find("2.00x"), std::string::npos);  // 2 ms before, 1 ms after
  EXPECT_NE(html.find("2.00 ms"), std::string::npos);
  EXPECT_NE(html.find("1.00 ms"), std::string::npos);
  EXPECT_NE(html.find("12.5 s"), std::string::npos);
  EXPECT_NE(html.find("19 / 32"), std::string::npos);  // measured 3 + 16 of a budget of 32
  EXPECT_NE(html.find("<summary>TuneLayout(TuneKernels)</summary>"),
            std::string::npos);  // not a known pipeline
  EXPECT_NE(html.find("test&lt;cpu&gt;"), std::string::npos);

  ReportOptions named;
  named.pipeline_names[MakeRun().pipeline] = "my_pipeline";
  EXPECT_NE(TuningReportHtml(*MakeDatabase(), named).find("<summary>my_pipeline</summary>"),
            std::string::npos);
}

TEST(TuningReport, EveryCurveIsAnSvgLineChart) {
  std::string html = TuningReportHtml(*MakeDatabase(), {});
  // The kernel search and two kernel workloads; the hand-made run has no evaluation log (like
  // runs recorded before it existed), so its graph-level curve is not drawn but explained.
  EXPECT_EQ(Count(html, "<svg"), 3u);
  EXPECT_NE(html.find("recorded by an older Tandem"), std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  EXPECT_GE(Count(html, "<polyline"), 2u);
  EXPECT_NE(html.find("no data"), std::string::npos);  // @other has no records
  // The kernel with records is charted first, with its failure counted.
  EXPECT_LT(html.find("@fused_conv&lt;2d&gt;"), html.find("@other"));
  EXPECT_NE(html.find("5 records, 1 failed, best 2.00 ms"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://www.w3.org/2000/svg\""), html.find("xmlns=\"") + 7);

  ReportOptions few;
  few.max_kernel_charts = 1;
  html = TuningReportHtml(*MakeDatabase(), few);
  EXPECT_EQ(Count(html, "<svg"), 2u);
  EXPECT_NE(html.find("the 1 with the most records shown"), std::string::npos);
}

TEST(TuningReport, DecisionTreeNestsPassesUnderTheirTuningPass) {
  std::string tree = DecisionTreeHtml(MakeRun(), MakeDatabase().get());
  EXPECT_EQ(ListDepthAt(tree, ">InferType<"), 1);
  EXPECT_EQ(ListDepthAt(tree, ">TuneLayout<"), 1);
  EXPECT_EQ(ListDepthAt(tree, ">FuseOps<"), 2);
  EXPECT_EQ(ListDepthAt(tree, ">TuneKernels<"), 2);
  EXPECT_EQ(ListDepthAt(tree, kKernelHash), 3);
  EXPECT_EQ(ListDepthAt(tree, ">Legalize<"), 1);
  EXPECT_NE(tree.find("<code class=\"decision\">NCHW16c</code>"), std::string::npos);
  EXPECT_NE(tree.find("of NCHW, NCHW16c"), std::string::npos);
  EXPECT_NE(tree.find("best 1.10 ms (input 2.00 ms)"), std::string::npos);
  EXPECT_NE(tree.find("1 kernel scheduled"), std::string::npos);
  EXPECT_NE(tree.find("@fused_conv&lt;2d&gt;"), std::string::npos);
  EXPECT_NE(tree.find("1 instruction</summary><pre>"), std::string::npos);
  EXPECT_NE(tree.find("sample_perfect_tile"), std::string::npos);
  EXPECT_EQ(Count(tree, "<details"), Count(tree, "</details>"));
  EXPECT_EQ(Count(tree, "<ul"), Count(tree, "</ul>"));
}

TEST(TuningReport, DecisionTreeWithoutMatchingPipelineNestsAfterTuningInstructions) {
  TuningRun run = MakeRun();
  run.pipeline = "";  // the structure is unknown: a tuning instruction owns what follows
  std::string tree = DecisionTreeHtml(run, nullptr);
  EXPECT_EQ(ListDepthAt(tree, ">InferType<"), 1);
  EXPECT_EQ(ListDepthAt(tree, ">TuneLayout<"), 1);
  EXPECT_EQ(ListDepthAt(tree, ">FuseOps<"), 2);
  EXPECT_EQ(ListDepthAt(tree, ">TuneKernels<"), 2);
  EXPECT_EQ(ListDepthAt(tree, ">Legalize<"), 3);
}

TEST(TuningReport, PipelineStructure) {
  std::vector<PipelineNode> nodes = PipelineStructure(
      "InferType, TuneLayout(sample=2, eval=[FoldConstant, "
      "TuneBackendPlacement(eval=[FuseOps, TuneKernels(trials=8)])]), "
      "PlaceOnBackend(backend=\"a,b(\"), Legalize");
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].name, "InferType");
  EXPECT_EQ(nodes[1].name, "TuneLayout");
  ASSERT_EQ(nodes[1].eval.size(), 2u);
  EXPECT_EQ(nodes[1].eval[1].name, "TuneBackendPlacement");
  ASSERT_EQ(nodes[1].eval[1].eval.size(), 2u);
  EXPECT_EQ(nodes[1].eval[1].eval[1].text, "TuneKernels(trials=8)");
  EXPECT_EQ(nodes[2].name, "PlaceOnBackend");
  EXPECT_EQ(nodes[3].name, "Legalize");
  EXPECT_TRUE(PipelineStructure("").empty());
}

TEST(TuningReport, EscapesEveryText) {
  TuningRun run = MakeRun();
  run.model = "<script>alert(1)</script>";
  run.pipeline = "Tune<X>";
  run.trace.mutable_instructions()[1].decision = ir::AttrValue(std::string("<b>\"x\"&'y'"));
  run.after_seconds.clear();
  run.after_error = "failed: <oops>";
  std::unique_ptr<Database> db = MakeInMemoryDatabase();
  CommitTuningRun(*db, run);
  std::string html = TuningReportHtml(*db, {});
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>\"x\""), std::string::npos);
  EXPECT_EQ(html.find("<oops>"), std::string::npos);
  EXPECT_EQ(html.find("Tune<X>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&quot;x&quot;&amp;&#39;y&#39;"), std::string::npos);
  EXPECT_NE(html.find("&lt;oops&gt;"), std::string::npos);
  EXPECT_EQ(HtmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(TuningReport, EmptyDatabaseSaysSo) {
  std::string html = TuningReportHtml(*MakeInMemoryDatabase(), {});
  EXPECT_NE(html.find("This tuning database is empty"), std::string::npos);
  EXPECT_EQ(html.find("<table"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(TuningReport, ModelFilter) {
  std::unique_ptr<Database> db = MakeDatabase();
  ReportOptions options;
  options.model = "tiny<cnn>";
  std::string html = TuningReportHtml(*db, options);
  EXPECT_NE(html.find("@fused_conv"), std::string::npos);  // scheduled by the run
  EXPECT_EQ(html.find("@other"), std::string::npos);       // not scheduled by it
  options.model = "resnet";
  try {
    TuningReportHtml(*db, options);
    FAIL() << "expected an error";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tuning run of model 'resnet'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tiny<cnn>"), std::string::npos);
  }
}

TEST(SvgLineChart, PointsAndStepsAndNoData) {
  LineChart chart{"t", "x", "y"};
  EXPECT_NE(RenderLineChart(chart).find("no data"), std::string::npos);
  ChartSeries series{"s"};
  series.step = true;
  series.points = {{1, 3e-3}, {2, 1e-3}};
  chart.series.push_back(series);
  std::string svg = RenderLineChart(chart);
  EXPECT_EQ(Count(svg, "<polyline"), 1u);
  // A step curve holds the previous value until the next x: three vertices for two points.
  size_t start = svg.find("points=\"") + 8;
  std::string points = svg.substr(start, svg.find('"', start) - start);
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 3);
  EXPECT_EQ(FormatDuration(1.5e-3), "1.50 ms");
  EXPECT_EQ(FormatDuration(250e-6), "250 us");
  EXPECT_EQ(FormatDuration(0), "-");
}

}  // namespace
}  // namespace tandem::report
