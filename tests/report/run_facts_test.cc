// The facts the report and `tandem tune` show, on a hand-made run with an evaluation log: whole
// modules and pieces apart, best-so-far only over whole modules, confirmations and failures
// (with reasons) marked, the kernel search's weighted sum never rising with an unmeasured task
// at its default latency, GFLOP/s against the recorded peak; the new fields of a run round-trip
// through JSON and a run stored without them still decodes; the terminal summary fits 100
// columns.
#include <gtest/gtest.h>

#include <sstream>

#include "report/kernel_search_section.h"
#include "report/run_facts.h"
#include "report/terminal_summary.h"
#include "report/tuning_report.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {
namespace {

using tuning::GraphEvaluation;
using tuning::TuningRecord;
using tuning::TuningRun;

constexpr const char* kTarget = "llvm|cpu=test|schema=1";
constexpr const char* kPass = "TuneConvAlgorithm(per_conv=1)";

void Commit(tuning::Database& db, const std::string& workload, const std::string& kind,
            const std::string& candidate, std::vector<double> seconds, std::string error = "") {
  db.CommitWorkload({workload, kind, kind + " " + workload});
  TuningRecord record;
  record.workload_hash = workload;
  record.target = kTarget;
  record.candidate_hash = candidate;
  record.trace_json = "{\"instructions\":[]}";
  record.run_seconds = std::move(seconds);
  record.error = std::move(error);
  record.measured_at = "2026-11-28T10:00:00Z";
  db.CommitRecord(record);
}

// A run of one graph pass (whole modules w1..w3, pieces p1 p2 much faster than any whole module,
// a confirmation, a failed module) and one kernel search of two tasks (k2 never measured).
struct Recorded {
  std::unique_ptr<tuning::Database> db = tuning::MakeInMemoryDatabase();
  TuningRun run;
};

Recorded MakeRecorded() {
  Recorded r;
  tuning::Database& db = *r.db;
  Commit(db, "b0", "graph", "", {9e-3});
  Commit(db, "w1", "graph", "", {8e-3});
  Commit(db, "p1", "graph", "", {2e-6});
  Commit(db, "w2", "graph", "", {6e-3, 6e-3, 7e-3});
  Commit(db, "p2", "graph", "", {3e-6});
  Commit(db, "w3", "graph", "", {}, "crashed: signal 11");
  Commit(db, "w2", "graph", "confirm-1", {6.5e-3});
  Commit(db, "w1", "graph", "confirm-1", {8.5e-3});
  Commit(db, "k1", "kernel", "default", {4e-3});
  Commit(db, "k1", "kernel", "c1", {5e-3});
  Commit(db, "k1", "kernel", "c2", {2e-3});
  Commit(db, "k1", "kernel", "c3", {}, "wrong result: max relative error 1");
  Commit(db, "k1", "kernel", "c4", {1e-3});
  TuningRun& run = r.run;
  run.model = "m";
  run.model_hash = "00000000000000aa";
  run.pipeline = "InferType, " + std::string(kPass) + ", TuneKernels";
  run.target = kTarget;
  run.counts[kPass] = {8, 0, 6, 1, 2, 0.5, 0.25, 2};
  run.counts["TuneKernels"] = {6, 0, 5, 1, 1, 0.5, 0.25, 0};
  auto log = [&](std::string pass, std::string w, std::string c, bool piece, int64_t measured) {
    run.graph_evaluations.push_back(
        {pass, w, c, piece, false, measured, static_cast<double>(measured)});
  };
  log("(before: default_heuristic)", "b0", "", false, 1);
  log(kPass, "w1", "", false, 2);
  log(kPass, "p1", "", true, 3);
  log(kPass, "w2", "", false, 4);
  log(kPass, "p2", "", true, 5);
  log(kPass, "w3", "", false, 6);
  log(kPass, "w2", "confirm-1", false, 6);
  log(kPass, "w1", "confirm-1", false, 6);
  log(kPass, "w1", "", false, 7);  // answered again later: the best stays w2's
  tuning::KernelTuningCurve curve;
  curve.pass = "TuneKernels";
  curve.num_tasks = 2;
  curve.tasks = {{"k1", "fused_conv", 2, 4e9, "default"}, {"k2", "softmax", 1, 1e6, ""}};
  curve.batches = {{0, 3, {"default", "c1", "c2"}}, {0, 5, {"c3", "c4", "missing"}}};
  run.kernel_curves.push_back(curve);
  run.fma_peak = {"AVX2", 8, 2, 100};
  run.before_seconds = {9e-3};
  run.after_seconds = {6e-3};
  run.measured_at = "2026-11-28T10:00:00Z";
  tuning::CommitTuningRun(db, run);
  return r;
}

TEST(RunFacts, EndToEndCurveHasOnlyWholeModulesAndRecordedLatencies) {
  Recorded r = MakeRecorded();
  RunFacts facts = CollectRunFacts(r.run, *r.db);
  ASSERT_TRUE(facts.graph.logged);
  ASSERT_EQ(facts.graph.end_to_end.size(), 1u);
  const std::vector<PlotPoint>& best = facts.graph.end_to_end[0].points;
  ASSERT_EQ(best.size(), 3u);  // w1, then w2, then w2 still best at the last evaluation
  EXPECT_EQ(best[0].record, (RecordRef{"w1", ""}));
  EXPECT_EQ(best[1].record, (RecordRef{"w2", ""}));
  EXPECT_EQ(best[2].record, (RecordRef{"w2", ""}));
  EXPECT_EQ(best[2].x, 8);  // the 8th evaluation of the tuning pass
  for (const PlotPoint& point : best) {
    EXPECT_EQ(RecordSeconds(*r.db, kTarget, point.record), point.seconds);
    EXPECT_GE(point.seconds, 6e-3);  // never a piece's microseconds
  }
  EXPECT_EQ(facts.graph.whole_modules, 3);
  EXPECT_EQ(facts.graph.piece_modules, 2);
  ASSERT_EQ(facts.graph.pieces.size(), 1u);
  EXPECT_EQ(facts.graph.pieces[0].points.size(), 2u);
  ASSERT_EQ(facts.graph.confirmations.size(), 1u);
  EXPECT_EQ(facts.graph.confirmations[0].points.size(), 2u);
  ASSERT_TRUE(facts.graph.before);
  EXPECT_EQ(facts.graph.before->seconds, 9e-3);
}

TEST(RunFacts, FailuresPerPassWithReasons) {
  Recorded r = MakeRecorded();
  RunFacts facts = CollectRunFacts(r.run, *r.db);
  ASSERT_EQ(facts.failures.size(), 2u);
  for (const PassFailures& pass : facts.failures) {
    EXPECT_EQ(pass.failed, 1) << pass.pass;
    ASSERT_EQ(pass.by_reason.size(), 1u) << pass.pass;
  }
  EXPECT_TRUE(facts.failures[0].by_reason.count("crashed: signal 11"));
  EXPECT_EQ(facts.failures[0].over_budget, 2);
  EXPECT_EQ(facts.failures[1].pass, "TuneKernels");
  EXPECT_EQ(facts.failures[1].by_reason.begin()->second[0], (RecordRef{"k1", "c3"}));
}

TEST(RunFacts, KernelSumNeverRisesAndUnmeasuredTasksAreLeftOutOrAtDefault) {
  Recorded r = MakeRecorded();
  RunFacts facts = CollectRunFacts(r.run, *r.db);
  ASSERT_EQ(facts.kernel_searches.size(), 1u);
  const KernelSearchFacts& search = facts.kernel_searches[0];
  EXPECT_EQ(search.left_out, 1u);  // k2: no default schedule measured
  ASSERT_EQ(search.weighted.size(), 3u);
  EXPECT_DOUBLE_EQ(search.weighted[0].seconds, 2 * 4e-3);  // the default schedule at 0 trials
  EXPECT_DOUBLE_EQ(search.weighted[1].seconds, 2 * 2e-3);
  EXPECT_DOUBLE_EQ(search.weighted[2].seconds, 2 * 1e-3);
  EXPECT_EQ(search.weighted[2].record, (RecordRef{"k1", "c4"}));
  for (size_t k = 1; k < search.weighted.size(); ++k) {
    EXPECT_LE(search.weighted[k].seconds, search.weighted[k - 1].seconds);
  }
  const KernelTaskFacts& task = search.tasks[0];
  EXPECT_EQ(task.measured, 5);  // "missing" has no record
  EXPECT_EQ(task.failed, 1);
  EXPECT_DOUBLE_EQ(task.BestGflops(), 4000.0);  // 4e9 FLOP in 1 ms
  EXPECT_EQ(GflopsText(task.BestGflops(), r.run.fma_peak), "4000.0 (4000% of peak)");
}

TEST(RunFacts, ReportMarksPiecesConfirmationsAndFailures) {
  Recorded r = MakeRecorded();
  std::string html = TuningReportHtml(*r.db, {});
  EXPECT_NE(html.find("data-chart=\"graph-end-to-end\""), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"graph-pieces\""), std::string::npos);
  EXPECT_NE(html.find("Pieces of the model measured alone"), std::string::npos);
  EXPECT_NE(html.find("2 confirmations"), std::string::npos);
  EXPECT_NE(html.find("crashed: signal 11"), std::string::npos);
  EXPECT_NE(html.find("wrong result: max relative error 1"), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"kernel-weighted\""), std::string::npos);
  EXPECT_NE(html.find("1 task without a measured default schedule left out"), std::string::npos);
  EXPECT_NE(html.find("00000000000000aa"), std::string::npos);  // the model's hash
  EXPECT_NE(html.find("100.0 GFLOP/s (AVX2"), std::string::npos);
}

TEST(RunFacts, NewRunFieldsRoundTripAndOldRunsStillDecode) {
  Recorded r = MakeRecorded();
  TuningRun back = tuning::TuningRunFromJson(tuning::TuningRunToJson(r.run), r.run.trace.ToJson());
  EXPECT_TRUE(back == r.run);
  EXPECT_EQ(back.graph_evaluations, r.run.graph_evaluations);
  EXPECT_EQ(back.kernel_curves[0].batches, r.run.kernel_curves[0].batches);
  EXPECT_EQ(back.fma_peak, r.run.fma_peak);
  // As stored before the log, the batches and the peak existed.
  TuningRun old = r.run;
  old.graph_evaluations.clear();
  old.kernel_curves[0].tasks.clear();
  old.kernel_curves[0].batches.clear();
  old.fma_peak = {};
  std::string json = tuning::TuningRunToJson(old);
  for (const char* field : {"\"graph_evaluations\":[],", ",\"tasks\":[]", "\"batches\":[],"}) {
    size_t at = json.find(field);
    ASSERT_NE(at, std::string::npos) << field;
    json.erase(at, std::string(field).size());
  }
  TuningRun decoded = tuning::TuningRunFromJson(json, old.trace.ToJson());
  EXPECT_TRUE(decoded == old);
  RunFacts facts = CollectRunFacts(decoded, *r.db);
  EXPECT_FALSE(facts.graph.logged);
  EXPECT_FALSE(facts.kernel_searches[0].logged);
  // A batch naming a task the curve does not have is an error, not a crash.
  std::string bad = tuning::TuningRunToJson(r.run);
  bad.replace(bad.find("\"task\":0"), 8, "\"task\":9");
  EXPECT_THROW(tuning::TuningRunFromJson(bad, r.run.trace.ToJson()), ir::Error);
}

TEST(TerminalSummary, FitsOneHundredColumnsAndSaysWhatFailed) {
  Recorded r = MakeRecorded();
  r.run.pipeline = std::string(300, 'x');
  r.run.counts[std::string(150, 'y')] = {1, 0, 1, 0, 0, 0, 0, 0};
  std::string text = TuningSummaryText(r.run, CollectRunFacts(r.run, *r.db), "joint");
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), kSummaryColumns) << line;
  }
  EXPECT_NE(text.find("tuning summary: m (model hash 00000000000000aa)"), std::string::npos);
  EXPECT_NE(text.find("speedup 1.50x"), std::string::npos);
  EXPECT_NE(text.find("crashed: signal 11"), std::string::npos);
  EXPECT_NE(text.find("weighted latency 8.00 ms (default schedules) -> 2.00 ms (4.00x)"),
            std::string::npos);
  EXPECT_NE(text.find("over the 1 of 2 tasks"), std::string::npos);
}

}  // namespace
}  // namespace tandem::report
