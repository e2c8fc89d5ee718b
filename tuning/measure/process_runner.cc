// ProcessRunner: measures a batch in forked worker processes (see tuning/measure/runner.h).
//
// The parent forks a worker for the rest of the batch; the worker measures the candidates in
// order and writes two messages per candidate to a pipe: "starting candidate i" and its result.
// The parent reads them with poll() under a deadline that restarts with every message. A worker
// that dies (a crash in generated code) or misses the deadline (a hang, killed with SIGKILL)
// costs the candidate it was on, and a new worker takes the candidates after it. Every worker is
// reaped with waitpid, whatever happens. The pipe only goes from worker to parent: the parent
// never writes to it, so it cannot get SIGPIPE from it.
//
// Executables holding a GPU context (cuBLAS subgraphs) never go to a worker: CUDA cannot be used
// in a child forked after the parent initialized it ("initialization error", or a hang), and
// their device buffers belong to the parent's context. The measurement server
// (tuning/measure/measure_server.h), forked when the runner was constructed, rebuilds them in
// processes that initialize CUDA themselves, when this process had not initialized CUDA before
// forking it (backends::CudaStateOfThisProcess, which the cuBLAS backend keeps); otherwise they
// are measured in this process, the one that built them, with a note on stderr.
#include <fcntl.h>
#include <omp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "backends/runtime/thread_pool.h"
#include "tuning/measure/child_process.h"
#include "tuning/measure/measure_server.h"
#include "tuning/measure/runner.h"
#include "tuning/measure/wire_format.h"

namespace tandem::tuning {

namespace {

using Clock = std::chrono::steady_clock;

// Message kinds; a message is: kind (1 byte), candidate index (u32), payload size (u32), payload.
constexpr uint8_t kStarting = 'S';
constexpr uint8_t kResult = 'R';
constexpr size_t kHeaderBytes = 9;

std::string EncodeMessage(uint8_t kind, size_t index, const std::string& payload) {
  std::string out;
  Append<uint8_t>(out, kind);
  Append<uint32_t>(out, static_cast<uint32_t>(index));
  Append<uint32_t>(out, static_cast<uint32_t>(payload.size()));
  out += payload;
  return out;
}

// The worker: runs in the child right after fork() and never returns into the caller's code
// (no stack unwinding into it, no destructors, no atexit handlers).
[[noreturn]] void WorkerMain(int fd, pid_t parent, const std::vector<RunInput>& inputs,
                             const std::vector<size_t>& order, size_t first,
                             const MeasureOptions& options) {
  // A hanging worker must not outlive a parent that was killed (the forking thread waits for
  // the worker, so it cannot end first otherwise); a crash ends it with its signal.
  PrepareForkedChild(fd, parent);
  try {
    StartThreadPoolAfterFork(options.num_threads);
    for (size_t k = first; k < order.size(); ++k) {
      size_t index = order[k];
      if (!WriteAll(fd, EncodeMessage(kStarting, index, ""))) _exit(2);
      // Only the worker's first candidate pays the minimum warm-up time (see MeasureOptions).
      MeasureOptions candidate_options = options;
      if (k != first) candidate_options.min_warmup_seconds = 0;
      MeasureResult result = MeasureHere(inputs[index], candidate_options);
      if (!WriteAll(fd, EncodeMessage(kResult, index, EncodeResult(result)))) _exit(2);
    }
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

// One worker process: its pipe's read end and its pid; killed and reaped when still running.
class Worker {
 public:
  Worker(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  ~Worker() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    close(fd_);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  int fd() const { return fd_; }
  // Waits for the worker to end; its wait status.
  int Wait() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }
  int Kill() {
    kill(pid_, SIGKILL);
    return Wait();
  }

 private:
  pid_t pid_;
  int fd_;
};

// Measures order[first..] in one worker process; fills their results until the worker ends.
// Returns the position in `order` where the next worker starts (always > first).
size_t RunWorker(const std::vector<RunInput>& inputs, const std::vector<size_t>& order,
                 size_t first, const MeasureOptions& options, std::vector<MeasureResult>& results) {
  // Not the candidates' fault: a setup failure, never recorded as their result.
  auto fail_rest = [&](const std::string& reason) {
    for (size_t k = first; k < order.size(); ++k) {
      results[order[k]] = MeasureResult::SetupFailure(reason);
    }
    return order.size();
  };
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return fail_rest(fmt::format("cannot start a worker process: pipe: {}", strerror(errno)));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(fds[0]);
    close(fds[1]);
    return fail_rest(fmt::format("cannot start a worker process: fork: {}", strerror(error)));
  }
  if (pid == 0) {
    close(fds[0]);
    WorkerMain(fds[1], parent, inputs, order, first, options);
  }
  close(fds[1]);
  Worker worker(pid, fds[0]);

  // (Capped at a year so that the deadline arithmetic cannot overflow.)
  auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(options.timeout_seconds, 365 * 86400.0)));
  size_t current = first;  // the candidate the worker is on or starts next
  Clock::time_point deadline = Clock::now() + timeout;
  std::string received;
  char chunk[65536];
  while (true) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      worker.Kill();
      results[order[current]] =
          MeasureResult::Failure(fmt::format("timed out after {:g} s", options.timeout_seconds));
      return current + 1;
    }
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd request{worker.fd(), POLLIN, 0};
    int ready = poll(&request, 1, static_cast<int>(std::min<int64_t>(wait_ms, 1000 * 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    ssize_t n = read(worker.fd(), chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // end of file: the worker is gone
    received.append(chunk, static_cast<size_t>(n));
    // Handles every complete message.
    size_t offset = 0;
    while (received.size() - offset >= kHeaderBytes) {
      auto kind = ReadAt<uint8_t>(received, offset);
      auto index = ReadAt<uint32_t>(received, offset + 1);
      auto size = ReadAt<uint32_t>(received, offset + 5);
      if (received.size() - offset - kHeaderBytes < size) break;
      std::string payload = received.substr(offset + kHeaderBytes, size);
      offset += kHeaderBytes + size;
      if (current >= order.size()) {  // every result is in: the rest is noise
        worker.Kill();
        return current;
      }
      if (index != order[current]) {
        worker.Kill();
        results[order[current]] =
            MeasureResult::Failure("the worker process sent a message out of order");
        return current + 1;
      }
      if (kind == kResult) {
        std::optional<MeasureResult> result = DecodeResult(payload);
        results[index] = result ? std::move(*result)
                                : MeasureResult::Failure("the worker process sent a bad result");
        ++current;
      } else if (kind != kStarting) {
        worker.Kill();
        results[index] = MeasureResult::Failure("the worker process sent an unknown message");
        return current + 1;
      }
      deadline = Clock::now() + timeout;
    }
    received.erase(0, offset);
  }
  int status = worker.Wait();
  if (current >= order.size()) return current;
  results[order[current]] = MeasureResult::Failure(DescribeCrash(status, "worker process"));
  return current + 1;
}

// Says once per process that GPU candidates are measured in it, and why.
void WarnMeasuringHereOnce() {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fflush(stdout);
  std::fprintf(stderr,
               "tandem: note: GPU candidates are measured in the tuning process, without "
               "isolation (a crash in one ends it): this process initialized CUDA before its "
               "measurement server was started, and CUDA cannot be used in a process forked after "
               "that (construct the ProcessRunner before building or checking GPU backends to "
               "measure them in the server)\n");
}

}  // namespace

ProcessRunner::ProcessRunner() : ProcessRunner(Options{}) {}

ProcessRunner::ProcessRunner(Options options)
    : options_(std::move(options)), server_(std::make_unique<MeasureServer>()) {
  if (!options_.measure_in_server) {
    options_.measure_in_server = [](const backends::Executable& executable) {
      return !executable.runs_in_forked_process();
    };
  }
}

ProcessRunner::~ProcessRunner() = default;

std::vector<MeasureResult> ProcessRunner::Run(const std::vector<RunInput>& inputs,
                                              const MeasureOptions& options) {
  std::vector<MeasureResult> results(inputs.size());
  std::vector<size_t> order;   // candidates that have something to run in a worker
  std::vector<size_t> server;  // candidates for the measurement server
  std::vector<size_t> here;    // GPU contexts when the server cannot isolate them (see below)
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].executable) {
      results[i] = MeasureResult::Failure("no executable to measure");
    } else if (!inputs[i].executable->runs_in_forked_process() ||
               options_.measure_in_server(*inputs[i].executable)) {
      // (A GPU context never goes to a forked worker, whatever measure_in_server says.)
      server.push_back(i);
    } else {
      order.push_back(i);
    }
  }
  if (auto problem = MeasureOptionsProblem(options)) {
    for (const std::vector<size_t>* group : {&order, &server, &here}) {
      for (size_t i : *group) {
        results[i] = MeasureResult::SetupFailure("invalid measure options: " + *problem);
      }
    }
    return results;
  }
  for (size_t i : server) {
    // The server measures a GPU context when its measurement processes can initialize CUDA
    // themselves; when this process initialized CUDA before the server (the running one, or the
    // one Measure would start again) was forked they cannot (CUDA's calls fail or hang there), so
    // it is measured here, in the process that built it.
    if (!inputs[i].executable->runs_in_forked_process() && !server_->isolates_cuda()) {
      here.push_back(i);
    } else {
      results[i] = server_->Measure(inputs[i], options);
    }
  }
  if (!here.empty()) {
    WarnMeasuringHereOnce();
    std::vector<RunInput> batch;
    for (size_t i : here) batch.push_back(inputs[i]);
    std::vector<MeasureResult> measured = InProcessRunner().Run(batch, options);
    for (size_t k = 0; k < here.size(); ++k) results[here[k]] = std::move(measured[k]);
  }
  // A forked child keeps only the forking thread, with that thread's OpenMP state: a thread that
  // ran a parallel region (oneDNN runs on OpenMP) carries a team of threads that do not exist in
  // the child, whose first parallel region would wait for them forever. Releasing the team
  // before forking makes the child's OpenMP start its own (the parent's next region does too).
  omp_pause_resource_all(omp_pause_hard);
  size_t position = 0;
  while (position < order.size()) position = RunWorker(inputs, order, position, options, results);
  return results;
}

}  // namespace tandem::tuning
