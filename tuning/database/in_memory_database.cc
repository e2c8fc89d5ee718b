// The in-memory tuning database: the reference behaviour the SQLite database matches, for tests
// and for tuning runs that need no persistence.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "tuning/database/database.h"
#include "tuning/database/database_internal.h"

namespace tandem::tuning {
namespace {

class InMemoryDatabase final : public Database {
 public:
  void CommitWorkload(const Workload& workload) override {
    std::lock_guard lock(mutex_);
    if (workload_index_.count(workload.hash) != 0) return;
    workload_index_.emplace(workload.hash, workloads_.size());
    workloads_.push_back(workload);
  }

  std::optional<Workload> GetWorkload(const std::string& hash) const override {
    std::lock_guard lock(mutex_);
    auto it = workload_index_.find(hash);
    if (it == workload_index_.end()) return std::nullopt;
    return workloads_[it->second];
  }

  std::vector<Workload> Workloads() const override {
    std::lock_guard lock(mutex_);
    return workloads_;
  }

  void CommitRecord(const TuningRecord& record) override {
    std::lock_guard lock(mutex_);
    InsertRecord(record);
  }

  void CommitChargedRecord(const TuningRecord& record, const std::string& job) override {
    std::lock_guard lock(mutex_);
    InsertRecord(record);
    jobs_[job].insert(JobTrialName(record.workload_hash, record.candidate_hash));
  }

  int64_t JobSpent(const std::string& job) const override {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(job);
    return it == jobs_.end() ? 0 : static_cast<int64_t>(it->second.size());
  }

  std::vector<std::string> JobTrials(const std::string& job) const override {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return {};
    return {it->second.begin(), it->second.end()};
  }

  void ResetJob(const std::string& job) override {
    std::lock_guard lock(mutex_);
    jobs_.erase(job);
  }

 private:
  void InsertRecord(const TuningRecord& record) {
    internal::CheckRecordFields(record);
    if (workload_index_.count(record.workload_hash) == 0) {
      internal::ThrowMissingWorkload(record.workload_hash);
    }
    auto key = std::make_pair(record.workload_hash, record.target);
    auto [it, inserted] = by_target_.try_emplace(key);
    if (inserted) targets_[record.workload_hash].push_back(record.target);
    it->second.push_back(records_.size());
    records_.push_back(record);
  }

 public:
  std::vector<TuningRecord> Records(const std::string& workload_hash,
                                    const std::string& target) const override {
    std::lock_guard lock(mutex_);
    std::vector<TuningRecord> result;
    for (size_t index : Indices(workload_hash, target)) result.push_back(records_[index]);
    return result;
  }

  std::optional<TuningRecord> FindRecord(const std::string& workload_hash,
                                         const std::string& target,
                                         const std::string& candidate_hash) const override {
    std::lock_guard lock(mutex_);
    const std::vector<size_t>& indices = Indices(workload_hash, target);
    for (auto it = indices.rbegin(); it != indices.rend(); ++it) {
      if (records_[*it].candidate_hash == candidate_hash) return records_[*it];
    }
    return std::nullopt;
  }

  std::vector<TuningRecord> Best(const std::string& workload_hash, const std::string& target,
                                 size_t k) const override {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<double, size_t>> ranked;  // (median, commit index)
    for (size_t index : Indices(workload_hash, target)) {
      if (records_[index].ok()) ranked.emplace_back(records_[index].median_seconds(), index);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<TuningRecord> result;
    for (size_t i = 0; i < ranked.size() && i < k; ++i) {
      result.push_back(records_[ranked[i].second]);
    }
    return result;
  }

  size_t NumRecords() const override {
    std::lock_guard lock(mutex_);
    return records_.size();
  }

  std::vector<std::string> Targets(const std::string& workload_hash) const override {
    std::lock_guard lock(mutex_);
    auto it = targets_.find(workload_hash);
    return it == targets_.end() ? std::vector<std::string>{} : it->second;
  }

  void PutBlob(const std::string& name, const std::string& bytes) override {
    std::lock_guard lock(mutex_);
    blobs_[name] = bytes;
  }

  std::optional<std::string> GetBlob(const std::string& name) const override {
    std::lock_guard lock(mutex_);
    auto it = blobs_.find(name);
    if (it == blobs_.end()) return std::nullopt;
    return it->second;
  }

 private:
  // Commit indices of the records of (workload, target), in commit order. Caller holds mutex_.
  const std::vector<size_t>& Indices(const std::string& workload_hash,
                                     const std::string& target) const {
    static const std::vector<size_t> kNone;
    auto it = by_target_.find(std::make_pair(workload_hash, target));
    return it == by_target_.end() ? kNone : it->second;
  }

  mutable std::mutex mutex_;
  std::vector<Workload> workloads_;
  std::unordered_map<std::string, size_t> workload_index_;
  std::vector<TuningRecord> records_;
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_target_;
  std::unordered_map<std::string, std::vector<std::string>> targets_;
  std::map<std::string, std::string> blobs_;
  std::map<std::string, std::set<std::string>> jobs_;  // trials spent per tuning job
};

}  // namespace

std::unique_ptr<Database> MakeInMemoryDatabase() {
  return std::make_unique<InMemoryDatabase>();
}

}  // namespace tandem::tuning
