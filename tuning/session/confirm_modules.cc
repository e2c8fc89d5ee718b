// TuningSession::ConfirmModules: re-measuring the finalists of a decision together.
#include <fmt/format.h>

#include <algorithm>

#include "ir/structural.h"
#include "tuning/session/record_reuse.h"
#include "tuning/session/tuning_session.h"

namespace tandem::tuning {

namespace {

// The candidate hash a confirmation record carries: the group of modules measured together
// (their distinct hashes, sorted) and how, so that a different group or round count is a new
// record.
std::string ConfirmationKey(const std::vector<std::string>& distinct_sorted, int rounds) {
  ir::StableHasher hasher;
  for (const std::string& hash : distinct_sorted) hasher.UpdateString(hash);
  hasher.UpdateU64(static_cast<uint64_t>(rounds));
  return "confirm-" + ir::HashToHex(hasher.Digest());
}

// The median of each round of a confirmation's pooled runs (stored in round order); empty when
// they do not split into `rounds` equal rounds.
std::vector<double> RoundMedians(const MeasureResult& pooled, int rounds) {
  size_t n = pooled.run_seconds.size();
  if (rounds < 1 || n == 0 || n % static_cast<size_t>(rounds) != 0) return {};
  size_t per_round = n / static_cast<size_t>(rounds);
  std::vector<double> medians;
  for (size_t r = 0; r < static_cast<size_t>(rounds); ++r) {
    auto begin = pooled.run_seconds.begin() + static_cast<std::ptrdiff_t>(r * per_round);
    std::vector<double> round(begin, begin + static_cast<std::ptrdiff_t>(per_round));
    medians.push_back(MeasureResult::FromRunSeconds(std::move(round), 0).median_seconds);
  }
  return medians;
}

// A confirmation's latency: the median of its quietest round. Contention on a shared host only
// ever slows a run down, so the best round is the closest to the machine's own speed, and a
// slow spell over some of the rounds cannot flip the decision (the pooled median could). The
// pooled runs are stored in round order, so a replay from the database computes the same.
MeasureResult BestRound(MeasureResult pooled, int rounds) {
  if (!pooled.ok() || rounds < 2) return pooled;
  for (double median : RoundMedians(pooled, rounds)) {
    pooled.median_seconds = std::min(pooled.median_seconds, median);
  }
  return pooled;
}

}  // namespace

bool TuningSession::ConfirmedGain(const MeasureResult& challenger, const MeasureResult& incumbent,
                                  int rounds, double minimum_gain) {
  if (!challenger.ok()) return false;
  if (!incumbent.ok()) return true;
  double limit = 1 - minimum_gain;
  // 1. The quietest rounds.
  if (challenger.median_seconds > incumbent.median_seconds * limit) return false;
  // 2. Round by round: the median of the ratios.
  std::vector<double> mine = RoundMedians(challenger, rounds);
  std::vector<double> theirs = RoundMedians(incumbent, rounds);
  if (mine.size() != theirs.size() || mine.size() < 2) return true;
  std::vector<double> ratios;
  for (size_t r = 0; r < mine.size(); ++r) {
    if (theirs[r] <= 0) return false;
    ratios.push_back(mine[r] / theirs[r]);
  }
  return MeasureResult::FromRunSeconds(std::move(ratios), 0).median_seconds <= limit;
}

std::vector<MeasureResult> TuningSession::ConfirmModules(
    const std::vector<EvaluationRequest>& requests, const std::string& pass) {
  int rounds = options_.confirm_rounds;
  std::vector<std::string> hashes;
  for (const EvaluationRequest& request : requests) {
    hashes.push_back(ir::HashToHex(ir::StructuralHash(request.module)));
  }
  std::vector<std::string> distinct = hashes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (rounds < 2 || distinct.size() < 2) return {};
  std::string key = ConfirmationKey(distinct, rounds);
  EvaluationCounts& counts = counts_[pass];

  // Answered from the database only when the whole group is: the results must come from one
  // interleaved measurement to be comparable.
  std::map<std::string, MeasureResult> by_hash;
  for (const std::string& hash : distinct) {
    std::optional<TuningRecord> record = database_->FindRecord(hash, target_descriptor_, key);
    if (!record || !RecordAnswersUnder(*record, options_.measure)) break;
    by_hash[hash] = record->ok() ? MeasureResult::FromRunSeconds(record->run_seconds, 0)
                                 : MeasureResult::Failure(record->error);
  }
  if (by_hash.size() == distinct.size()) {
    for (const std::string& hash : distinct) {
      size_t i =
          static_cast<size_t>(std::find(hashes.begin(), hashes.end(), hash) - hashes.begin());
      LogGraphEvaluation(pass, requests[i].module, hash, key, /*reused=*/true);
    }
  } else {
    if (options_.max_seconds > 0 && ElapsedSeconds() >= options_.max_seconds) return {};
    by_hash.clear();
    std::vector<ir::IRModule> modules;
    std::vector<const EvaluationRequest*> sources;
    for (const std::string& hash : distinct) {
      size_t i =
          static_cast<size_t>(std::find(hashes.begin(), hashes.end(), hash) - hashes.begin());
      modules.push_back(requests[i].module);
      sources.push_back(&requests[i]);
    }
    MeasureOptions measure = options_.measure;
    measure.min_repeat_seconds =
        std::max(measure.min_repeat_seconds, options_.confirm_min_repeat_seconds);
    std::vector<MeasureResult> measured = BuildAndRun(
        modules, build_options(),
        [&](size_t k) -> const Reference& { return ReferenceFor(modules[k]); }, counts, rounds,
        &measure);
    std::string measured_by =
        MeasuredByJson(fmt::format("graph-confirm-{}-rounds", rounds), measure);
    for (size_t k = 0; k < distinct.size(); ++k) {
      database_->CommitWorkload({distinct[k], "graph", GraphWorkloadText(modules[k])});
      TuningRecord record;
      record.workload_hash = distinct[k];
      record.candidate_hash = key;
      record.trace_json = sources[k]->trace.ToJson();
      record.measured_by = measured_by;
      CommitMeasurement(std::move(record), measured[k], counts, /*confirmation=*/true);
      LogGraphEvaluation(pass, modules[k], distinct[k], key, /*reused=*/false);
      by_hash[distinct[k]] = std::move(measured[k]);
    }
  }
  std::vector<MeasureResult> results;
  for (const std::string& hash : hashes) results.push_back(BestRound(by_hash.at(hash), rounds));
  return results;
}

}  // namespace tandem::tuning
