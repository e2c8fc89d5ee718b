#include "tuning/search/evolutionary_search.h"
#include "tuning/database/record_trace.h"

#include <algorithm>
#include <map>

#include "ir/error.h"

namespace tandem::tuning {

TaskSearch::TaskSearch(TuningTask task, const kernels::SearchSpace& space, SearchOptions options,
                       uint64_t seed)
    : task_(std::move(task)), space_(space), options_(options), random_(seed) {
  for (const kernels::Schedule& design :
       kernels::GenerateDesignSpaces(task_.kernel, space_, seed)) {
    design_spaces_.push_back(design.trace());
  }
  if (design_spaces_.empty()) design_spaces_.push_back(ir::Trace());
}

std::optional<TaskSearch::Program> TaskSearch::FromTrace(const ir::Trace& trace) {
  std::optional<kernels::Schedule> schedule = kernels::ReplayProgram(task_.kernel, trace, space_);
  if (!schedule) return std::nullopt;
  return MakeProgram(*schedule);
}

std::optional<TaskSearch::Program> TaskSearch::MakeProgram(
    const kernels::Schedule& schedule) const {
  return Program{schedule.function(), schedule.trace(),
                 TuningSession::CandidateHash(schedule.function()),
                 ExtractFeatures(schedule.function())};
}

std::optional<TaskSearch::Program> TaskSearch::Sample() {
  const ir::Trace& design = design_spaces_[static_cast<size_t>(
      random_.Uniform(static_cast<int64_t>(design_spaces_.size())))];
  std::optional<kernels::Schedule> schedule =
      kernels::SampleProgram(task_.kernel, design, space_, random_);
  if (!schedule) return std::nullopt;
  return MakeProgram(*schedule);
}

std::optional<TaskSearch::Program> TaskSearch::Mutate(const Program& parent) {
  double total = 0;
  for (const auto& [mutator, weight] : space_.mutators) total += weight;
  if (total <= 0) return std::nullopt;
  double pick = random_.UniformReal() * total;
  for (const auto& [mutator, weight] : space_.mutators) {
    pick -= weight;
    if (pick > 0) continue;
    std::optional<ir::Trace> trace = mutator->Apply(parent.trace, task_.kernel, random_);
    if (!trace) return std::nullopt;
    return FromTrace(*trace);
  }
  return std::nullopt;
}

std::vector<TaskSearch::Program> TaskSearch::Evolve(std::vector<Program> population,
                                                    CostModel& model) {
  for (int generation = 0; generation < options_.generations && !population.empty(); ++generation) {
    std::vector<std::vector<float>> features;
    for (const Program& p : population) features.push_back(p.features);
    std::vector<double> scores = model.Predict(features);
    double lowest = *std::min_element(scores.begin(), scores.end());
    std::vector<double> weights;
    double sum = 0;
    for (double s : scores) {
      weights.push_back(s - lowest + 1e-6);
      sum += weights.back();
    }
    std::vector<Program> next = population;
    std::set<std::string> seen;
    for (const Program& p : population) seen.insert(p.hash);
    int failures = 0;
    while (static_cast<int>(next.size()) < 2 * options_.population &&
           failures < options_.max_failures) {
      double pick = random_.UniformReal() * sum;
      size_t parent = 0;
      while (parent + 1 < weights.size() && pick > weights[parent]) pick -= weights[parent++];
      if (random_.UniformReal() >= options_.mutation_probability) {
        ++failures;  // the parent itself: nothing new
        continue;
      }
      std::optional<Program> child = Mutate(population[parent]);
      if (!child || !seen.insert(child->hash).second) {
        ++failures;
        continue;
      }
      failures = 0;
      next.push_back(std::move(*child));
    }
    // The parents keep their scores; only the children are scored.
    features.clear();
    for (size_t i = population.size(); i < next.size(); ++i) features.push_back(next[i].features);
    if (!features.empty()) {
      std::vector<double> child_scores = model.Predict(features);
      scores.insert(scores.end(), child_scores.begin(), child_scores.end());
    }
    std::vector<size_t> order(next.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    population.clear();
    for (size_t i = 0;
         i < order.size() && static_cast<int>(population.size()) < options_.population; ++i) {
      population.push_back(std::move(next[order[i]]));
    }
  }
  return population;
}

std::vector<KernelCandidate> TaskSearch::NextBatch(int count, CostModel& model,
                                                   const Database& database,
                                                   const std::string& target) {
  std::vector<KernelCandidate> batch;
  std::set<std::string> chosen;
  auto take = [&](const Program& p) {
    if (static_cast<int>(batch.size()) >= count) return;
    if (measured_.count(p.hash) != 0 || !chosen.insert(p.hash).second) return;
    batch.push_back(p);
  };
  if (options_.offer_default_schedule && !default_offered_) {
    default_offered_ = true;
    try {
      ir::Trace trace =
          kernels::ApplyDefaultSchedule(task_.kernel, options_.default_schedule).trace();
      if (std::optional<Program> p = FromTrace(trace)) {
        default_candidate_ = p->hash;
        take(*p);
      }
    } catch (const ir::Error&) {
      // No default schedule for this kernel: the search alone decides.
    }
  }
  // Fresh random samples: the whole batch for replay, the population's base and the
  // exploration share for evolutionary search.
  std::vector<Program> samples;
  int wanted = options_.evolutionary ? options_.population : count;
  int failures = 0;
  std::set<std::string> sampled;
  while (static_cast<int>(samples.size()) < wanted && failures < options_.max_failures) {
    std::optional<Program> p = Sample();
    if (!p || measured_.count(p->hash) != 0 || !sampled.insert(p->hash).second) {
      ++failures;
      continue;
    }
    failures = 0;
    samples.push_back(std::move(*p));
  }
  if (!options_.evolutionary) {
    for (const Program& p : samples) take(p);
  } else {
    std::vector<Program> population;
    for (const TuningRecord& record : database.Best(
             task_.workload_hash, target, static_cast<size_t>(options_.seeds_from_database))) {
      try {
        if (std::optional<Program> p = FromTrace(DecodeRecordTrace(record))) {
          population.push_back(std::move(*p));
        }
      } catch (const ir::Error&) {
        // A record whose trace no longer replays (e.g. written by an older Tandem) or does not
        // decode (corrupt) is skipped.
      }
    }
    population.insert(population.end(), samples.begin(), samples.end());
    std::vector<Program> evolved = Evolve(std::move(population), model);
    int exploit = count - static_cast<int>(options_.epsilon * count + 0.5);
    for (const Program& p : evolved) {
      if (static_cast<int>(batch.size()) >= exploit) break;
      take(p);
    }
    // Exploration: random fresh samples, then whatever else is left.
    std::vector<size_t> order(samples.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i = 0; i + 1 < order.size(); ++i) {
      size_t j = i + static_cast<size_t>(random_.Uniform(static_cast<int64_t>(order.size() - i)));
      std::swap(order[i], order[j]);
    }
    for (size_t i : order) take(samples[i]);
    for (const Program& p : evolved) take(p);
  }
  if (batch.empty()) exhausted_ = true;
  return batch;
}

void TaskSearch::Commit(const std::vector<KernelCandidate>& batch,
                        const std::vector<MeasureResult>& results) {
  for (size_t i = 0; i < batch.size() && i < results.size(); ++i) {
    measured_.insert(batch[i].hash.empty() ? TuningSession::CandidateHash(batch[i].scheduled)
                                           : batch[i].hash);
    ++trials_;
    if (results[i].ok() && results[i].median_seconds < best_seconds_) {
      best_seconds_ = results[i].median_seconds;
      best_trace_ = batch[i].trace;
    }
  }
  curve_.emplace_back(trials_, best_seconds_);
}

}  // namespace tandem::tuning
