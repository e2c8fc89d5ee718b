// What tuning falls back on is reported, not swallowed: a saved cost model that cannot be used
// (a warning; a fresh model), and stored schedules that no longer replay (counted with the first
// reason; the kernel gets its default schedule).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/kernel/kernel_parser.h"
#include "ir/trace.h"
#include "tuning/search/apply_history_best.h"
#include "tuning/measure/builder.h"
#include "tuning/search/cost_model.h"
#include "tuning/database/database.h"
#include "tuning/measure/runner.h"
#include "tuning/search/task.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {
namespace {

TuningSession::Options NamedDatabase() {
  TuningSession::Options options;
  options.database_name = "tuning.db";
  return options;
}

std::shared_ptr<TuningSession> SessionOn(std::shared_ptr<Database> database) {
  return std::make_shared<TuningSession>(ir::Target{}, std::move(database),
                                         std::make_shared<LocalBuilder>(),
                                         std::make_shared<InProcessRunner>(), NamedDatabase());
}

TEST(ReportedFallbacks, CorruptSavedCostModelIsAWarningAndAFreshModel) {
  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  std::shared_ptr<TuningSession> session = SessionOn(database);
  database->PutBlob(session->CostModelBlobName("xgboost"), "TNDMXGB1 and then garbage");
  testing::internal::CaptureStderr();
  CostModel& model = session->KernelCostModel("xgboost");
  std::string printed = testing::internal::GetCapturedStderr();

  ASSERT_EQ(session->warnings().size(), 1u);
  const std::string& warning = session->warnings()[0];
  EXPECT_NE(warning.find("tuning.db"), std::string::npos) << warning;
  EXPECT_NE(warning.find(session->CostModelBlobName("xgboost")), std::string::npos) << warning;
  EXPECT_NE(warning.find("malformed saved bytes"), std::string::npos) << warning;  // the reason
  EXPECT_EQ(printed, "warning: " + warning + "\n");
  // A fresh model: what a new model of the session's seed saves.
  EXPECT_EQ(model.Save(), MakeXGBoostModel(0)->Save());
  // Asked again, the session hands out the same model without a second warning.
  EXPECT_EQ(&session->KernelCostModel("xgboost"), &model);
  EXPECT_EQ(session->warnings().size(), 1u);
}

TEST(ReportedFallbacks, SavedCostModelOfOtherFeaturesIsAWarning) {
  // A trained model whose programs had 3 features cannot score this version's feature vectors.
  std::unique_ptr<CostModel> old = MakeXGBoostModel(1);
  std::vector<TrainingExample> examples;
  for (int i = 0; i < 20; ++i) {
    examples.push_back({"w", {float(i), float(i % 3), 1.0f}, 1e-3 * (1 + i % 5)});
  }
  old->Update(examples);
  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  std::shared_ptr<TuningSession> session = SessionOn(database);
  database->PutBlob(session->CostModelBlobName("xgboost"), old->Save());
  std::vector<std::string> received;
  session->on_warning = [&](const std::string& message) { received.push_back(message); };
  CostModel& model = session->KernelCostModel("xgboost");
  ASSERT_EQ(received.size(), 1u);
  EXPECT_NE(received[0].find("expected 3"), std::string::npos) << received[0];
  EXPECT_EQ(session->warnings(), received);
  EXPECT_EQ(model.Save(), MakeXGBoostModel(0)->Save());
}

TEST(ReportedFallbacks, ValidSavedCostModelLoadsWithoutWarning) {
  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  std::shared_ptr<TuningSession> session = SessionOn(database);
  database->PutBlob(session->CostModelBlobName("random"), MakeRandomModel(42)->Save());
  CostModel& model = session->KernelCostModel("random");
  EXPECT_TRUE(session->warnings().empty());
  EXPECT_EQ(model.Save(), MakeRandomModel(42)->Save());
}

ir::KernelFunction Matmul() {
  return ir::ParseKernel(R"(
  kernel @mm(%a: f32[16,24], %w: f32[24,8]) -> (%c: f32[16,8]) {
    block root() {
      for %i in 16 {
        for %j in 8 {
          for %k in 24 {
            block C(%vi: spatial 16 = %i, %vj: spatial 8 = %j, %vk: reduce 24 = %k)
                reads(%a[%vi, %vk], %w[%vk, %vj]) writes(%c[%vi, %vj]) {
              init {
                %c[%vi, %vj] = 0.0
              }
              %c[%vi, %vj] = %c[%vi, %vj] + %a[%vi, %vk] * %w[%vk, %vj]
            }
          }
        }
      }
    }
  })");
}

TEST(ReportedFallbacks, StoredSchedulesThatNoLongerReplayAreCounted) {
  ir::KernelFunction kernel = Matmul();
  std::string hash = KernelWorkloadHash(kernel);
  std::string target = TargetDescriptor(ir::Target{});
  std::shared_ptr<Database> database = MakeInMemoryDatabase();
  database->CommitWorkload(Workload{hash, "kernel", "mm"});
  // A measured record whose trace names a block the kernel does not have (recorded by a
  // compiler that named blocks otherwise).
  TuningRecord record;
  record.workload_hash = hash;
  record.target = target;
  record.candidate_hash = "stale";
  record.trace_json =
      ir::Trace(
          {ir::Instruction{"get_block", {}, {{"name", std::string("no_such_block")}}, {"b0"}}})
          .ToJson();
  record.run_seconds = {1e-3};
  record.measured_at = "2026-01-01T00:00:00Z";
  record.measured_by = "{}";
  database->CommitRecord(record);

  auto stats = std::make_shared<HistoryBestStats>();
  kernels::ScheduleProvider provider =
      HistoryBestProvider(database, target, SearchSpaceFor(ir::Target{}, target), stats);
  EXPECT_FALSE(provider(kernel).has_value());  // the default schedule
  EXPECT_FALSE(provider(kernel).has_value());  // the same kernel again: counted once
  EXPECT_EQ(stats->default_schedule, 2);
  EXPECT_EQ(stats->from_database, 0);
  ASSERT_EQ(stats->not_replayed.size(), 1u);
  EXPECT_NE(stats->first_not_replayed.find("mm"), std::string::npos) << stats->first_not_replayed;
  EXPECT_NE(stats->first_not_replayed.find("no_such_block"), std::string::npos)
      << stats->first_not_replayed;
  std::string note = NotReplayedNote(*stats);
  EXPECT_EQ(note.rfind("1 stored schedules no longer replay (first: ", 0), 0u) << note;
  EXPECT_NE(note.find("); their kernels use default schedules"), std::string::npos) << note;

  // A kernel without records is not counted, and nothing is noted without stale schedules.
  ir::KernelFunction other = ir::ParseKernel(R"(
  kernel @copy(%a: f32[8]) -> (%b: f32[8]) {
    block root() {
      for %i in 8 {
        block B(%vi: spatial 8 = %i) reads(%a[%vi]) writes(%b[%vi]) {
          %b[%vi] = %a[%vi]
        }
      }
    }
  })");
  auto clean = std::make_shared<HistoryBestStats>();
  kernels::ScheduleProvider clean_provider =
      HistoryBestProvider(database, target, SearchSpaceFor(ir::Target{}, target), clean);
  EXPECT_FALSE(clean_provider(other).has_value());
  EXPECT_TRUE(clean->not_replayed.empty());
  EXPECT_EQ(NotReplayedNote(*clean), "");
}

}  // namespace
}  // namespace tandem::tuning
