// Isolated builds: a candidate's code generation in a child process (see isolated_build.h).
//
// Why fork, and how it is made safe. The legalized candidate (an IRModule in memory) reaches the
// child for free with fork(); fork+exec of a helper would need a serialized module and a helper
// binary found at run time by every program that tunes. But fork() in a multithreaded process
// copies every lock in whatever state another thread left it, and the child has only the
// forking thread: a lock held at that moment (one of LLVM's process-wide ones, the kernel object
// cache's) stays held forever in the child. So:
//   - the child runs only LLVM code generation (CompileKernelObjectsForBuild), on the forking
//     thread alone, and never generated code, OpenMP or the thread pool;
//   - every in-process step of this library's builds (legalization, which asks LLVM about the
//     target; linking; builds that are not isolated) holds a shared lock that a fork takes
//     exclusively, so no builder thread is inside LLVM or the kernel object cache while another
//     forks (a fork waiting for the lock keeps new in-process builds out, so forks do not starve);
//   - a lock held by some other thread of the process (not a builder) at the fork could still
//     block the child: then the child misses its timeout and is killed, and the candidate fails
//     as timed out (the run goes on).
// glibc's fork keeps malloc and stdio usable in the child; stdio buffers are flushed before
// forking so that a child that calls exit() does not write the parent's pending output again.
// (AddressSanitizer's allocator in GCC's libasan is not kept usable: under it, a child can block
// on an allocator lock another thread held at the fork, and time out.)
//
// The build, step by step:
//   1. The parent legalizes the candidate (in process, like any build) and checks that its
//      function exists: errors there read as in-process builds' errors.
//   2. When every kernel object of the legalized module is already in the parent's
//      KernelObjectCache, there is nothing for LLVM to compile, so nothing that isolation
//      guards against: the parent links in process and forks no child (unless a test hook is
//      set, which must run in a child).
//   3. Otherwise the parent makes a pipe and forks (under the exclusive lock). The child, which
//      inherits the legalized module, keeps only the pipe's write end and stdio, resets crash
//      signals to their defaults (no core file), makes an LLVM fatal error a message and an
//      exit, runs the test hook, compiles the kernels (found in the cache it inherited, or
//      compiled) and writes each object and its symbol to the pipe, then "done" (or the build's
//      error), and _exits.
//   4. The parent reads the pipe until end of file under a deadline of timeout_seconds from the
//      fork; past it, it kills the child. It reaps the child in every case.
//   5. A signal, a non-zero exit, an LLVM fatal error or a missed deadline is the candidate's
//      error. Otherwise the parent inserts the objects into its KernelObjectCache (in-process
//      work, under the shared lock like the rest) and links the legalized module in process,
//      finding every kernel in the cache. (An object the cache drops before that, past its byte
//      budget, is compiled again in this process: correct, not isolated.)
// The pipe only goes from child to parent, so the parent never gets SIGPIPE from it. A child
// outlives no parent thread that forked it: PR_SET_PDEATHSIG kills it with the thread.
#include "tuning/measure/isolated_build.h"

#include <fcntl.h>
#include <llvm/Support/ErrorHandling.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/llvm/kernel_object_cache.h"
#include "tuning/measure/child_process.h"

namespace tandem::tuning {

namespace {

using Clock = std::chrono::steady_clock;

// In-process builds share `in_process`; a fork holds `fork_turn` from before it waits for them
// until it has forked, which keeps new in-process builds waiting meanwhile.
std::mutex fork_turn;
std::shared_mutex in_process;

// Message kinds; a message is: kind (1 byte), payload size (u64), payload.
constexpr char kObject = 'O';      // u32 symbol size, symbol, object bytes
constexpr char kDone = 'D';        // every object was sent
constexpr char kError = 'E';       // the build threw: its message
constexpr char kFatalError = 'F';  // LLVM reported a fatal error: its reason
constexpr size_t kHeaderBytes = 9;

std::string EncodeMessage(char kind, const std::string& payload) {
  std::string out(1, kind);
  uint64_t size = payload.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  return out + payload;
}

int child_fd = -1;  // the pipe's write end, in the child

// LLVM's fatal errors (report_fatal_error) exit the process; in the child they say why first.
void OnLlvmFatalError(void*, const char* reason, bool) {
  WriteAll(child_fd, EncodeMessage(kFatalError, reason ? reason : "(no reason given)"));
  _exit(70);
}

// The child: runs right after fork() and never returns into the caller's code (no unwinding
// into it, no destructors, no atexit handlers).
[[noreturn]] void ChildMain(int fd, pid_t parent, const BuildInput& input,
                            const ir::IRModule& legalized,
                            const std::function<void(const BuildInput&)>& before_compile) {
  PrepareForkedChild(fd, parent);
  child_fd = fd;
  llvm::remove_fatal_error_handler();
  llvm::install_fatal_error_handler(OnLlvmFatalError);
  std::string result;
  try {
    if (before_compile) before_compile(input);
    for (const backends::KernelObject& object :
         backends::CompileKernelObjectsForBuild(legalized, input.options)) {
      std::string payload;
      auto symbol_size = static_cast<uint32_t>(object.symbol.size());
      payload.append(reinterpret_cast<const char*>(&symbol_size), sizeof(symbol_size));
      payload += object.symbol;
      payload += *object.object;
      if (!WriteAll(fd, EncodeMessage(kObject, payload))) _exit(2);
    }
    result = EncodeMessage(kDone, "");
  } catch (const std::exception& e) {
    result = EncodeMessage(kError, e.what());
  } catch (...) {
    result = EncodeMessage(kError, "unknown exception");
  }
  _exit(WriteAll(fd, result) ? 0 : 2);
}

// What the child sent: its objects, and how its build ended.
struct ChildReport {
  std::vector<backends::KernelObject> objects;
  bool done = false;
  std::string error;        // the build's error (kError)
  std::string fatal_error;  // LLVM's fatal error (kFatalError)
  bool malformed = false;
};

ChildReport Decode(const std::string& received) {
  ChildReport report;
  size_t offset = 0;
  while (offset < received.size()) {
    uint64_t size = 0;
    if (received.size() - offset < kHeaderBytes) break;
    std::memcpy(&size, received.data() + offset + 1, sizeof(size));
    char kind = received[offset];
    offset += kHeaderBytes;
    if (received.size() - offset < size) break;
    std::string payload = received.substr(offset, size);
    offset += size;
    if (kind == kObject) {
      uint32_t symbol_size = 0;
      if (payload.size() < sizeof(symbol_size)) break;
      std::memcpy(&symbol_size, payload.data(), sizeof(symbol_size));
      if (payload.size() - sizeof(symbol_size) < symbol_size) break;
      report.objects.push_back(
          {payload.substr(sizeof(symbol_size), symbol_size),
           std::make_shared<const std::string>(payload.substr(sizeof(symbol_size) + symbol_size))});
    } else if (kind == kDone) {
      report.done = true;
    } else if (kind == kError) {
      report.error = payload;
    } else if (kind == kFatalError) {
      report.fatal_error = payload;
    } else {
      break;
    }
  }
  report.malformed = offset != received.size();
  return report;
}

// The child's part of the build (steps 3 to 5); "" with the child's report, or the error that
// ends the build.
std::string RunChild(const BuildInput& input, const ir::IRModule& legalized, double timeout_seconds,
                     const std::function<void(const BuildInput&)>& before_compile,
                     ChildReport& report) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return fmt::format("build failed: cannot start a build process: pipe: {}", strerror(errno));
  }
  pid_t parent = getpid();
  int fork_error = 0;
  pid_t pid = ForkOutsideBuilds(
      [&] {
        close(fds[0]);
        ChildMain(fds[1], parent, input, legalized, before_compile);
      },
      &fork_error);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return fmt::format("build failed: cannot start a build process: fork: {}",
                       strerror(fork_error));
  }
  Clock::time_point deadline = DeadlineAfter(timeout_seconds);
  std::string received;
  bool ended = ReadUntil(fds[0], deadline, received) == ReadOutcome::kEnd;
  close(fds[0]);
  std::optional<int> status = ended ? WaitUntil(pid, deadline) : std::nullopt;
  if (!status) {
    KillAndReap(pid);
    return fmt::format("build timed out after {:g} s", timeout_seconds);
  }
  report = Decode(received);
  if (!report.fatal_error.empty()) return "build crashed: LLVM ERROR: " + report.fatal_error;
  if (WIFSIGNALED(*status)) {
    int signal_number = WTERMSIG(*status);
    return fmt::format("build crashed: signal {} ({})", signal_number, SignalName(signal_number));
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return fmt::format("build crashed: the build process exited with status {}",
                       WIFEXITED(*status) ? WEXITSTATUS(*status) : *status);
  }
  if (!report.error.empty()) return "build failed: " + report.error;
  if (report.malformed || !report.done) {
    return "build crashed: the build process sent an incomplete result";
  }
  return "";
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Held by in-process work (see the file comment): no fork happens meanwhile.
std::shared_lock<std::shared_mutex> NoForkMeanwhile() {
  std::lock_guard<std::mutex> turn(fork_turn);
  return std::shared_lock<std::shared_mutex>(in_process);
}

// Runs `work` in this process (holding off forks); "" or its exception as the build's error.
std::string RunHere(const std::function<void()>& work) {
  try {
    std::shared_lock<std::shared_mutex> no_fork = NoForkMeanwhile();
    work();
    return "";
  } catch (const std::exception& e) {
    return fmt::format("build failed: {}", e.what());
  } catch (...) {
    return "build failed: unknown exception";
  }
}

BuildOutput Failure(std::string error, Clock::time_point start) {
  BuildOutput output;
  output.error = std::move(error);
  output.seconds = SecondsSince(start);
  return output;
}

// `build` run in this process: its executable, or its exception as the error.
BuildOutput BuildHere(Clock::time_point start,
                      const std::function<std::unique_ptr<backends::Executable>()>& build) {
  BuildOutput output;
  output.error = RunHere([&] { output.executable = build(); });
  output.seconds = SecondsSince(start);
  if (!output.executable && output.error.empty()) output.error = "build failed: no executable";
  return output;
}

}  // namespace

pid_t ForkOutsideBuilds(const std::function<void()>& child_main, int* fork_errno) {
  std::lock_guard<std::mutex> turn(fork_turn);
  std::unique_lock<std::shared_mutex> alone(in_process);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (fork_errno) *fork_errno = errno;
  if (pid == 0) {
    child_main();
    _exit(1);
  }
  return pid;
}

BuildOutput BuildInProcess(const BuildInput& input) {
  return BuildHere(Clock::now(), [&] { return backends::Build(input.module, input.options); });
}

BuildOutput BuildIsolated(const BuildInput& input, double timeout_seconds,
                          const std::function<void(const BuildInput&)>& in_child_before_compile,
                          bool* forked) {
  Clock::time_point start = Clock::now();
  if (forked) *forked = false;
  // Step 1, and the check of step 2.
  ir::IRModule legalized;
  bool cached = false;
  std::string error = RunHere([&] {
    legalized = backends::LegalizeForBuild(input.module, input.options);
    cached =
        !in_child_before_compile && backends::KernelObjectsCachedForBuild(legalized, input.options);
  });
  if (!error.empty()) return Failure(std::move(error), start);
  if (!cached) {
    if (forked) *forked = true;
    ChildReport report;
    try {
      error = RunChild(input, legalized, timeout_seconds, in_child_before_compile, report);
    } catch (const std::exception& e) {  // only memory exhaustion: the child never returns here
      error = fmt::format("build failed: {}", e.what());
    }
    if (!error.empty()) return Failure(std::move(error), start);
    // The cache's lock, held by this thread while another forks, would be held forever in that
    // child: inserting is in-process work.
    std::shared_lock<std::shared_mutex> no_fork = NoForkMeanwhile();
    backends::KernelObjectCache& cache = backends::KernelObjectCache::Global();
    for (backends::KernelObject& object : report.objects) {
      cache.Insert(object.symbol, std::move(object.object));
    }
  }
  return BuildHere(start,
                   [&] { return backends::BuildLegalized(std::move(legalized), input.options); });
}

}  // namespace tandem::tuning
