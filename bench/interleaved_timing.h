// Interleaved timing of contenders, shared by the benchmarks that compare Tandem with oneDNN.
//
// These machines have noisy periods in which short two-thread kernels run several times slower,
// so one long measurement of one contender followed by one of the other can compare a quiet
// period with a noisy one. Instead the contenders take turns: each pass runs a block of N
// repeats of every contender (the order alternating from pass to pass) and keeps each block's
// median; a contender's latency is its best pass median. N is chosen per contender so that a
// block takes about `min_time` seconds, with at least `min_repeats` repeats (at least 3 when one
// run is slower than max_block_time / min_repeats). The turns are blocks rather than single
// calls because both runtimes keep their worker threads spinning for a while after a call:
// alternating single calls would time each contender while the other's idle workers still
// compete for the cores.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench/operator_workloads.h"

namespace tandem::bench {

struct TimingOptions {
  int passes = 5;
  double min_time = 0.2;
  int min_repeats = 10;
  double max_block_time = 5.0;
  // Pause after every block, so that the idle worker threads of the contender just timed, which
  // may spin-wait for more work (ONNX Runtime's do by default, OpenMP's for a while), stop
  // before the next contender's block. Needed when a contender runs in another process
  // (Contender::run_block): alternating with ONNX Runtime without the pause read Tandem's BERT
  // module 1.7-2x slower than alone (6.3-7.8 ms against 3.8), with 0.25 s as fast as alone.
  double settle_seconds = 0;
};

struct Contender {
  std::function<void()> run;
  // When set, a block of n runs timed by the contender itself (an engine in another process,
  // bench/external_contender.h); `run` is then unused.
  std::function<std::vector<double>(int n)> run_block;
  int repeats = 0;
  std::vector<double> block_medians;  // one per pass
  double best() const;
  double worst() const;
};

double TimeOnce(const std::function<void()>& run);
double Median(std::vector<double> values);

// Warms every contender up, picks its repeats per block, then runs options.passes passes of
// turns. `log` (may be empty) receives a line describing the plan.
void MeasureInTurns(const std::vector<Contender*>& contenders, const TimingOptions& options,
                    std::string* plan = nullptr);

// The 1-minute load average ("unknown" when /proc/loadavg cannot be read).
std::string LoadAverage();
// True when the load average exceeded the core count (other processes competed for the cores).
bool Overloaded(const std::string& load_average);
// A workload's oneDNN programs as contenders. Making them runs every program once and compares
// Tandem's output (already computed) with each program's output.
struct OnednnContenders {
  std::vector<Contender> programs;
  std::vector<double> errors;  // relative error of Tandem's output against each program's
  // The program with the best pass median (once measured).
  size_t Best() const;
  double WorstError() const;
};
OnednnContenders MakeOnednnContenders(const Workload& workload, OnednnContext& context,
                                      const ir::Tensor& tandem_output);

// Runs `run(name)` for every workload; one that throws becomes a row holding only its name and
// the error (a broken workload must not hide the others). `after(rows)` follows each workload.
template <class Row, class Run>
std::vector<Row> RunEachWorkload(const std::vector<std::string>& names, const Run& run,
                                 const std::function<void(const std::vector<Row>&)>& after = {}) {
  std::vector<Row> rows;
  for (const std::string& name : names) {
    try {
      rows.push_back(run(name));
    } catch (const std::exception& e) {
      Row row;
      row.name = name;
      row.error = e.what();
      std::cerr << fmt::format("{}: FAILED: {}\n", name, e.what());
      rows.push_back(row);
    }
    if (after) after(rows);
  }
  return rows;
}

// `text` quoted for a CSV field.
std::string CsvQuoted(const std::string& text);
// The workloads named in a comma-separated list (all of them for an empty list); Error for an
// unknown name, listing the known ones.
std::vector<std::string> SelectedWorkloads(const std::string& list);

}  // namespace tandem::bench
