// The measurement server (see measure_server.h).
//
// Messages on the socket pair between the tuning process and the server, both ways, are framed:
// a u64 payload size, then the payload. A request's payload is the candidate: its measure
// options (timeout first), its legalized module as text with every constant in full (the text
// form round-trips, see ir/printer.h), the build options that matter once legalized (function,
// code generation), its inputs and expected outputs. A reply's payload is the MeasureResult.
//
// One candidate, step by step:
//   1. The tuning process starts the server when there is none (ForkOutsideBuilds, after
//      releasing its OpenMP team like ProcessRunner's forks), sends the request and waits for the
//      reply until twice the candidate's timeout (build, then measurement; step 3) plus
//      kServerGraceSeconds.
//   2. The server reads the request and forks a measurement process, which inherits it. The
//      measurement process parses the module, builds it (backends::BuildLegalized), measures it
//      (MeasureHere) and writes to its pipe that it has built, then the result.
//   3. The server reads that pipe until end of file under the candidate's timeout (which starts
//      again when the measurement process says it has built the candidate), then reaps
//      the measurement process (killing it first past the timeout); a signal, a non-zero exit or
//      the timeout becomes the result's error. It sends the result.
//   4. A server that ends, sends garbage or misses the grace deadline is killed and reaped; the
//      candidate fails with the reason, and step 1 starts a new server for the next one.
// The server and its measurement processes are single-threaded at fork time (the server has only
// the forking thread), so their forks copy no lock held by another thread.
#include "tuning/measure/measure_server.h"

#include <fcntl.h>
#include <omp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>

#include "backends/external/external_backend.h"
#include "backends/runtime/executable.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tuning/measure/child_process.h"
#include "tuning/measure/isolated_build.h"
#include "tuning/measure/wire_format.h"

namespace tandem::tuning {

namespace {

// How long past the candidate's timeout the tuning process waits for the server's reply: the
// server's own work (a fork, copying the request and the reply) is quick.
constexpr double kServerGraceSeconds = 10;

// What a measurement process writes once it has built the candidate (or failed to), before
// the result: the timeout covers the build and the measurement separately.
constexpr char kBuilt = 'B';

std::string Frame(const std::string& payload) {
  std::string out;
  Append<uint64_t>(out, payload.size());
  return out + payload;
}

// Whether `received` holds a whole frame.
bool HasFrame(const std::string& received) {
  return received.size() >= sizeof(uint64_t) &&
         received.size() - sizeof(uint64_t) >= ReadAt<uint64_t>(received, 0);
}

std::string FramePayload(const std::string& received) {
  return received.substr(sizeof(uint64_t), ReadAt<uint64_t>(received, 0));
}

std::string EncodeRequest(const RunInput& input, const MeasureOptions& options) {
  std::string out;
  Append<double>(out, options.timeout_seconds);
  Append<int32_t>(out, options.warmup_runs);
  Append<double>(out, options.min_warmup_seconds);
  Append<int32_t>(out, options.repeats);
  Append<double>(out, options.min_repeat_seconds);
  Append<uint8_t>(out, options.flush_cache);
  Append<double>(out, options.tolerance);
  Append<int32_t>(out, options.num_threads);
  const backends::BuildOptions& build = input.executable->build_options();
  AppendString(out, ir::PrintModule(input.executable->module()));
  AppendString(out, build.function);
  AppendString(out, build.codegen.cpu);
  AppendString(out, build.codegen.features);
  Append<int32_t>(out, build.codegen.prefer_vector_width);
  Append<int32_t>(out, build.codegen.opt_level);
  Append<uint8_t>(out, build.codegen.allow_reassociation);
  Append<uint8_t>(out, build.codegen.verify);
  AppendTensors(out, input.inputs);
  AppendTensors(out, input.expected);
  return out;
}

// The measurement process (step 2): runs right after fork() and never returns.
[[noreturn]] void MeasureMain(int fd, pid_t server, const std::string& request) {
  PrepareForkedChild(fd, server);
  MeasureResult result;
  try {
    WireReader reader(request);
    MeasureOptions options;
    options.timeout_seconds = reader.Get<double>();
    options.warmup_runs = reader.Get<int32_t>();
    options.min_warmup_seconds = reader.Get<double>();
    options.repeats = reader.Get<int32_t>();
    options.min_repeat_seconds = reader.Get<double>();
    options.flush_cache = reader.Get<uint8_t>() != 0;
    options.tolerance = reader.Get<double>();
    options.num_threads = reader.Get<int32_t>();
    std::string module_text = reader.GetString();
    backends::BuildOptions build;
    build.function = reader.GetString();
    build.codegen.cpu = reader.GetString();
    build.codegen.features = reader.GetString();
    build.codegen.prefer_vector_width = reader.Get<int32_t>();
    build.codegen.opt_level = reader.Get<int32_t>();
    build.codegen.allow_reassociation = reader.Get<uint8_t>() != 0;
    build.codegen.verify = reader.Get<uint8_t>() != 0;
    RunInput input;
    input.inputs = reader.GetTensors();
    input.expected = reader.GetTensors();
    StartThreadPoolAfterFork(options.num_threads);
    try {
      input.executable = backends::BuildLegalized(ir::ParseModule(module_text), build);
    } catch (const std::exception& e) {
      result = MeasureResult::Failure(
          fmt::format("build failed in the measurement server: {}", e.what()));
    }
    if (!WriteAll(fd, std::string(1, kBuilt))) _exit(2);
    if (input.executable) result = MeasureHere(input, options);
  } catch (const std::exception& e) {
    result = MeasureResult::Failure(fmt::format("the measurement server's request: {}", e.what()));
  } catch (...) {
    _exit(3);
  }
  _exit(WriteAll(fd, EncodeResult(result)) ? 0 : 2);
}

// Steps 2 and 3 for one request: the candidate's result.
MeasureResult MeasureInChild(const std::string& request) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return MeasureResult::Failure(
        fmt::format("cannot start a measurement process: pipe: {}", strerror(errno)));
  }
  pid_t server = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    MeasureMain(fds[1], server, request);
  }
  int fork_error = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return MeasureResult::Failure(
        fmt::format("cannot start a measurement process: fork: {}", strerror(fork_error)));
  }
  double timeout = ReadAt<double>(request, 0);
  ChildClock::time_point deadline = DeadlineAfter(timeout);
  std::string received;
  ReadOutcome built =
      ReadUntil(fds[0], deadline, received, [](const std::string& in) { return !in.empty(); });
  if (built == ReadOutcome::kComplete) deadline = DeadlineAfter(timeout);
  bool ended =
      built != ReadOutcome::kDeadline && ReadUntil(fds[0], deadline, received) == ReadOutcome::kEnd;
  close(fds[0]);
  std::optional<int> status = ended ? WaitUntil(pid, deadline) : std::nullopt;
  if (!status) {
    KillAndReap(pid);
    return MeasureResult::Failure(fmt::format("timed out after {:g} s", timeout));
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return MeasureResult::Failure(DescribeCrash(*status, "measurement process"));
  }
  std::optional<MeasureResult> result;
  if (!received.empty() && received[0] == kBuilt) result = DecodeResult(received.substr(1));
  return result ? std::move(*result)
                : MeasureResult::Failure("the measurement process sent a bad result");
}

// The server (steps 2 and 3, for every request until the tuning process closes its end).
[[noreturn]] void ServerMain(int fd, pid_t parent) {
  PrepareForkedChild(fd, parent);
  try {
    while (true) {
      std::string received;
      if (ReadUntil(fd, ChildClock::time_point::max(), received, HasFrame) !=
          ReadOutcome::kComplete) {
        _exit(0);
      }
      std::string request = FramePayload(received);
      if (request.size() < sizeof(double)) _exit(4);
      if (!WriteAll(fd, Frame(EncodeResult(MeasureInChild(request))))) _exit(2);
    }
  } catch (...) {
    _exit(3);
  }
}

}  // namespace

MeasureServer::MeasureServer() {
  start_error_ = Start();
}

MeasureServer::~MeasureServer() {
  Stop();
}

std::string MeasureServer::Start() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return fmt::format("cannot start the measurement server: socketpair: {}", strerror(errno));
  }
  // As before ProcessRunner's forks (see process_runner.cc): the child's OpenMP starts afresh.
  omp_pause_resource_all(omp_pause_hard);
  pid_t parent = getpid();
  int fork_error = 0;
  pid_t pid = ForkOutsideBuilds(
      [&] {
        close(fds[0]);
        ServerMain(fds[1], parent);
      },
      &fork_error);
  // Read after the fork (the state only ever leaves kUntouched): untouched now was untouched at
  // the fork; a CUDA initialization on another thread meanwhile counts as inherited.
  bool before_cuda = backends::CudaStateOfThisProcess() == backends::CudaState::kUntouched;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return fmt::format("cannot start the measurement server: fork: {}", strerror(fork_error));
  }
  pid_ = pid;
  fd_ = fds[0];
  forked_before_cuda_ = before_cuda;
  return "";
}

bool MeasureServer::isolates_cuda() const {
  if (pid_ > 0) return forked_before_cuda_;
  return backends::CudaStateOfThisProcess() == backends::CudaState::kUntouched;
}

void MeasureServer::Stop() {
  if (pid_ > 0) KillAndReap(pid_);
  if (fd_ >= 0) close(fd_);
  pid_ = -1;
  fd_ = -1;
}

MeasureResult MeasureServer::Measure(const RunInput& input, const MeasureOptions& options) {
  // Step 1.
  if (pid_ < 0) start_error_ = Start();
  if (pid_ < 0) return MeasureResult::SetupFailure(start_error_);
  std::string request;
  try {
    request = Frame(EncodeRequest(input, options));
  } catch (const std::exception& e) {  // only memory exhaustion
    return MeasureResult::SetupFailure(fmt::format("cannot send the candidate: {}", e.what()));
  }
  if (!WriteAll(fd_, request)) {
    Stop();
    return MeasureResult::Failure("crashed: the measurement server ended before the request");
  }
  // Step 4.
  std::string received;
  ReadOutcome outcome = ReadUntil(
      fd_, DeadlineAfter(2 * options.timeout_seconds + kServerGraceSeconds), received, HasFrame);
  if (outcome == ReadOutcome::kDeadline) {
    Stop();
    return MeasureResult::Failure(
        fmt::format("timed out after {:g} s (the measurement server "
                    "stopped answering)",
                    options.timeout_seconds));
  }
  if (outcome == ReadOutcome::kEnd) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    Stop();
    return MeasureResult::Failure(DescribeCrash(status, "measurement server"));
  }
  std::optional<MeasureResult> result = DecodeResult(FramePayload(received));
  if (!result || received.size() != sizeof(uint64_t) + ReadAt<uint64_t>(received, 0)) {
    Stop();
    return MeasureResult::Failure("the measurement server sent a bad result");
  }
  return std::move(*result);
}

}  // namespace tandem::tuning
