// What the forked child processes of the tuning library share (ProcessRunner's workers,
// LocalBuilder's isolated builds): the set-up of a child right after fork(), writing to its pipe,
// and naming the signal that ended one. Internal to the tuning library.
#pragma once

#include <sys/types.h>

#include <string>

namespace tandem::tuning {

// In a child right after fork(), whose pipe to the parent `parent` is `fd`: the child is killed
// when the forking thread ends (and ends at once when that already happened), a crash ends it
// with its signal whatever handlers the parent installed and without a core file, a vanished
// parent makes write() fail instead of raising SIGPIPE, and every descriptor but stdio and `fd`
// is closed (copies of other children's pipes would delay their end of file).
void PrepareForkedChild(int fd, pid_t parent);

// Writes all of `data` to `fd` (retrying interrupted and partial writes); false when the pipe is
// gone. Async-signal-safe.
bool WriteAll(int fd, const std::string& data);

// The signal's name as errors give it: "SIGSEGV" (a description where the C library has no
// abbreviations).
std::string SignalName(int signal_number);

}  // namespace tandem::tuning
