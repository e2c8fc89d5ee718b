// An engine outside this process (ONNX Runtime or OpenVINO through bench/engine_latency.py
// --serve) timed in the same turns as Tandem's configurations.
//
// Why: the load of these shared machines changes within minutes, so an engine timed before or
// after Tandem's run meets another machine; taking turns block by block gives both the same
// periods. The command is started with a pipe on its standard input and output and speaks a line
// protocol:
//   engine -> "ready" once it has loaded (and checked) its model; anything else on that first
//             line, or the end of its output, is an error;
//   bench  -> "run N"; engine -> N wall-clock times in seconds on one line, each one call of the
//             model timed inside the engine (no pipe overhead in the numbers);
//   bench  -> "quit" (or end of input) when done.
// Its standard error passes through. Failures (the command cannot start, dies, answers
// something else, sends no line for 10 minutes) are ir::Error naming the contender and what it
// said last.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tandem::bench {

class ExternalContender {
 public:
  // Starts `command` (through /bin/sh -c) and waits until it reports ready.
  ExternalContender(std::string name, const std::string& command);
  ~ExternalContender();
  ExternalContender(const ExternalContender&) = delete;
  ExternalContender& operator=(const ExternalContender&) = delete;

  const std::string& name() const { return name_; }
  // Times `repeats` calls in the engine; their times in seconds.
  std::vector<double> RunBlock(int repeats);

 private:
  std::string ReadLine();
  bool Send(const std::string& line);
  void Stop();

  // The longest wait for one line of the engine (loading a model, one block of runs).
  static constexpr int kLineTimeoutSeconds = 600;

  std::string name_;
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string pending_;  // received, not yet returned as a line
};

}  // namespace tandem::bench
