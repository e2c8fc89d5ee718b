// What the forked child processes of the tuning library share (ProcessRunner's workers and
// measurement server, LocalBuilder's isolated builds): the set-up of a child right after fork(),
// writing to and reading from its pipe under a deadline, reaping it, and describing how it ended.
// Internal to the tuning library.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace tandem::tuning {

// In a child right after fork(), whose pipe to the parent `parent` is `fd`: the child is killed
// when the forking thread ends (and ends at once when that already happened), a crash ends it
// with its signal whatever handlers the parent installed and without a core file, a vanished
// parent makes write() fail instead of raising SIGPIPE, and every descriptor but stdio and `fd`
// is closed (copies of other children's pipes would delay their end of file).
void PrepareForkedChild(int fd, pid_t parent);

// In a forked child that runs generated code: a fresh global thread pool (only the forking thread
// survived the fork) with `num_threads` threads (0: every core; capped at the pool's maximum).
void StartThreadPoolAfterFork(int num_threads);

// Writes all of `data` to `fd` (retrying interrupted and partial writes); false when the pipe is
// gone. A socket's vanished reader never raises SIGPIPE (MSG_NOSIGNAL); a pipe's does unless the
// process ignores it. Async-signal-safe.
bool WriteAll(int fd, const std::string& data);

using ChildClock = std::chrono::steady_clock;

// The time `seconds` from now, capped at a year so that deadline arithmetic cannot overflow.
ChildClock::time_point DeadlineAfter(double seconds);

enum class ReadOutcome { kComplete, kEnd, kDeadline };
// Appends what `fd` delivers to `received` until `complete(received)` holds (kComplete; never,
// when `complete` is empty), the writer closes its end (kEnd, also on a read error) or the
// deadline passes (kDeadline). Interrupted calls are retried.
ReadOutcome ReadUntil(int fd, ChildClock::time_point deadline, std::string& received,
                      const std::function<bool(const std::string&)>& complete = nullptr);

// Waits for child `pid` to end until the deadline; its wait status, or nothing past the deadline.
std::optional<int> WaitUntil(pid_t pid, ChildClock::time_point deadline);

// Kills child `pid` with SIGKILL and reaps it.
void KillAndReap(pid_t pid);

// A candidate's failure for a child that ended with wait status `status` while measuring it:
// "crashed: signal 11 (SIGSEGV)", or "crashed: the <process> exited with status 3".
std::string DescribeCrash(int status, const std::string& process);

// The signal's name as errors give it: "SIGSEGV" (a description where the C library has no
// abbreviations).
std::string SignalName(int signal_number);

}  // namespace tandem::tuning
