#include "bench/interleaved_timing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "bench/operator_workloads.h"
#include "ir/error.h"

namespace tandem::bench {

double Contender::best() const {
  return *std::min_element(block_medians.begin(), block_medians.end());
}
double Contender::worst() const {
  return *std::max_element(block_medians.begin(), block_medians.end());
}

double TimeOnce(const std::function<void()>& run) {
  auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

namespace {

// Runs `run` for at least `seconds` and at least `runs` times, but stops after one second once
// it has run at least once; returns the fastest run.
double WarmUp(const std::function<void()>& run, double seconds, int runs) {
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int i = 0; (i < runs || total < seconds) && (i == 0 || total < 1.0); ++i) {
    double t = TimeOnce(run);
    best = std::min(best, t);
    total += t;
  }
  return best;
}

int RepeatsFor(double estimate, const TimingOptions& options) {
  if (estimate * options.min_repeats > options.max_block_time) {
    return std::max(3, static_cast<int>(options.max_block_time / estimate));
  }
  return std::max(options.min_repeats, static_cast<int>(std::ceil(options.min_time / estimate)));
}

}  // namespace

void MeasureInTurns(const std::vector<Contender*>& contenders, const TimingOptions& options,
                    std::string* plan) {
  for (Contender* c : contenders) {
    double estimate = 0;
    if (c->run_block) {
      std::vector<double> warm = c->run_block(3);
      estimate = *std::min_element(warm.begin(), warm.end());
    } else {
      estimate = WarmUp(c->run, 0.1, 3);
    }
    c->repeats = RepeatsFor(estimate, options);
    if (plan) *plan += fmt::format(" {}x~{:.0f}us", c->repeats, estimate * 1e6);
  }
  for (int pass = 0; pass < options.passes; ++pass) {
    for (size_t k = 0; k < contenders.size(); ++k) {
      Contender* c = contenders[pass % 2 == 0 ? k : contenders.size() - 1 - k];
      std::vector<double> times(static_cast<size_t>(c->repeats));
      if (c->run_block) {
        times = c->run_block(c->repeats);
      } else {
        for (double& t : times) t = TimeOnce(c->run);
      }
      if (options.settle_seconds > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(options.settle_seconds));
      }
      c->block_medians.push_back(Median(times));
    }
  }
}

size_t OnednnContenders::Best() const {
  size_t best = 0;
  for (size_t p = 1; p < programs.size(); ++p) {
    if (programs[p].best() < programs[best].best()) best = p;
  }
  return best;
}

double OnednnContenders::WorstError() const {
  return errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
}

OnednnContenders MakeOnednnContenders(const Workload& workload, OnednnContext& context,
                                      const ir::Tensor& tandem_output) {
  OnednnContenders contenders;
  contenders.programs.resize(workload.onednn_programs.size());
  for (size_t p = 0; p < contenders.programs.size(); ++p) {
    const OnednnProgram& program = workload.onednn_programs[p];
    contenders.programs[p].run = [&program, &context] { program.Run(context.stream); };
    contenders.programs[p].run();
    contenders.errors.push_back(
        ir::RelativeError(tandem_output, workload.onednn_output.Reshaped(tandem_output.shape())));
  }
  return contenders;
}

std::string LoadAverage() {
  std::ifstream file("/proc/loadavg");
  std::string value;
  if (!(file >> value)) return "unknown";
  return value;
}

bool Overloaded(const std::string& load_average) {
  double cores = std::thread::hardware_concurrency();
  return std::atof(load_average.c_str()) > cores;
}

std::string CsvQuoted(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::vector<std::string> SelectedWorkloads(const std::string& list) {
  std::vector<std::string> known = WorkloadNames();
  if (list.empty()) return known;
  std::vector<std::string> names;
  std::stringstream stream(list);
  std::string name;
  while (std::getline(stream, name, ',')) {
    if (name.empty()) continue;
    if (!IsWorkloadName(name)) {
      throw ir::Error(fmt::format("unknown workload '{}' in --workloads (known: {})", name,
                                  WorkloadNamesText()));
    }
    names.push_back(name);
  }
  return names;
}

}  // namespace tandem::bench
