#include "tuning/database/replay_database.h"

namespace tandem::tuning {

namespace {

std::string Key(const std::string& workload, const std::string& target,
                const std::string& candidate) {
  return workload + '\n' + target + '\n' + candidate;
}

}  // namespace

bool ReplayDatabase::Revealed(const TuningRecord& record) const {
  return revealed_.count(Key(record.workload_hash, record.target, record.candidate_hash)) > 0;
}

void ReplayDatabase::CommitRecord(const TuningRecord& record) {
  recorded_->CommitRecord(record);
  revealed_.insert(Key(record.workload_hash, record.target, record.candidate_hash));
}

void ReplayDatabase::CommitChargedRecord(const TuningRecord& record, const std::string& job) {
  recorded_->CommitChargedRecord(record, job);
  revealed_.insert(Key(record.workload_hash, record.target, record.candidate_hash));
}

std::vector<TuningRecord> ReplayDatabase::Records(const std::string& workload_hash,
                                                  const std::string& target) const {
  std::vector<TuningRecord> records;
  for (TuningRecord& record : recorded_->Records(workload_hash, target)) {
    if (Revealed(record)) records.push_back(std::move(record));
  }
  return records;
}

std::optional<TuningRecord> ReplayDatabase::FindRecord(const std::string& workload_hash,
                                                       const std::string& target,
                                                       const std::string& candidate_hash) const {
  std::optional<TuningRecord> record = recorded_->FindRecord(workload_hash, target, candidate_hash);
  if (record) revealed_.insert(Key(workload_hash, target, candidate_hash));
  return record;
}

std::vector<TuningRecord> ReplayDatabase::Best(const std::string& workload_hash,
                                               const std::string& target, size_t k) const {
  // The recorded best ones, filtered, keep their order (best first, ties earlier first).
  std::vector<TuningRecord> best;
  for (TuningRecord& record : recorded_->Best(workload_hash, target, recorded_->NumRecords())) {
    if (best.size() == k) break;
    if (Revealed(record)) best.push_back(std::move(record));
  }
  return best;
}

}  // namespace tandem::tuning
