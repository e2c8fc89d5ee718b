// ReplayDatabase: a recorded database seen as it was at the same point of the recorded run.
//
// A pipeline fixture holds every record of a whole tuning run. Replaying the run against it
// directly would let early decisions see records measured later (the best schedule of a kernel
// so far, the seeds of an evolutionary search, whether a kernel is tuned yet). This decorator
// hides a record from Best and Records until the run has asked for exactly that candidate
// (FindRecord: the answer that stands for its measurement) or committed one itself; FindRecord
// and everything else pass through. Replayed in order, the run sees what the recorded run saw.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "tuning/database/database.h"

namespace tandem::tuning {

class ReplayDatabase : public Database {
 public:
  explicit ReplayDatabase(std::shared_ptr<Database> recorded) : recorded_(std::move(recorded)) {}

  void CommitWorkload(const Workload& workload) override { recorded_->CommitWorkload(workload); }
  std::optional<Workload> GetWorkload(const std::string& hash) const override {
    return recorded_->GetWorkload(hash);
  }
  std::vector<Workload> Workloads() const override { return recorded_->Workloads(); }
  void CommitRecord(const TuningRecord& record) override;
  std::vector<TuningRecord> Records(const std::string& workload_hash,
                                    const std::string& target) const override;
  std::optional<TuningRecord> FindRecord(const std::string& workload_hash,
                                         const std::string& target,
                                         const std::string& candidate_hash) const override;
  std::vector<TuningRecord> Best(const std::string& workload_hash, const std::string& target,
                                 size_t k) const override;
  size_t NumRecords() const override { return recorded_->NumRecords(); }
  std::vector<std::string> Targets(const std::string& workload_hash) const override {
    return recorded_->Targets(workload_hash);
  }
  void PutBlob(const std::string& name, const std::string& bytes) override {
    recorded_->PutBlob(name, bytes);
  }
  std::optional<std::string> GetBlob(const std::string& name) const override {
    return recorded_->GetBlob(name);
  }
  int64_t JobSpent(const std::string& job) const override { return recorded_->JobSpent(job); }
  std::vector<std::string> JobTrials(const std::string& job) const override {
    return recorded_->JobTrials(job);
  }
  void ResetJob(const std::string& job) override { recorded_->ResetJob(job); }
  void CommitChargedRecord(const TuningRecord& record, const std::string& job) override;

 private:
  bool Revealed(const TuningRecord& record) const;
  std::shared_ptr<Database> recorded_;
  // (workload, target, candidate) asked for or committed so far.
  mutable std::set<std::string> revealed_;
};

}  // namespace tandem::tuning
