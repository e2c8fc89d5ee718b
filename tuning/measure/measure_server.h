// The measurement server: measures, isolated from the tuning process, candidates that a forked
// worker cannot run (GPU contexts: CUDA refuses a child forked after its parent initialized it).
//
// The server is a process forked from the tuning process when a MeasureServer is constructed
// (ProcessRunner constructs its server when it is constructed). The server runs no candidate code
// and never initializes CUDA itself: for each candidate it forks a measurement process, which
// rebuilds the candidate from its legalized module and build options (an executable cannot cross
// processes), measures it with MeasureHere and reports the result. So when the server was forked
// before this process first initialized CUDA (backends::CudaStateOfThisProcess), every
// measurement process starts from a process that never touched CUDA and can initialize it
// itself: isolates_cuda() says whether that holds. When it does not (CUDA was initialized here
// first: by an earlier build of a GPU candidate, or an availability check, in the same program),
// a measurement process cannot use CUDA (the cuBLAS backend then says it is not available there),
// and the caller must not send it candidates that use CUDA. Internal to the tuning library.
#pragma once

#include <sys/types.h>

#include <string>

#include "tuning/measure/measure.h"
#include "tuning/measure/runner.h"

namespace tandem::tuning {

class MeasureServer {
 public:
  // Starts the server process (a failure to start is each candidate's error in Measure).
  MeasureServer();
  // Ends the server and reaps it.
  ~MeasureServer();
  MeasureServer(const MeasureServer&) = delete;
  MeasureServer& operator=(const MeasureServer&) = delete;

  // Measures `input` in a new measurement process; never throws for the candidate's failure.
  // Guarantees: a measurement process that crashes gives "crashed: signal 11 (SIGSEGV)" (or its
  // exit status), one that runs past options.timeout_seconds (for its build, then again for its
  // measurement) is killed and gives "timed out after N s", a candidate that does not rebuild gives
  // "build failed in the measurement server:
  // ..."; the server reaps every measurement process. A server that itself dies or stops
  // answering (it runs no candidate code, so only when killed from outside) is killed, reaped
  // and started again for the next candidate (forked from this process as it is then: one that
  // has initialized CUDA since gives measurement processes that cannot use it).
  MeasureResult Measure(const RunInput& input, const MeasureOptions& options);

  // Whether the measurement processes of the server (the running one, or else the one that
  // Measure would start now) can use CUDA: the server was (would be) forked while this process
  // had not initialized CUDA.
  bool isolates_cuda() const;

 private:
  // Forks the server; "" or why it could not.
  std::string Start();
  // Kills (when running) and reaps the server.
  void Stop();

  pid_t pid_ = -1;
  int fd_ = -1;  // this end of the socket pair to the server
  std::string start_error_;
  bool forked_before_cuda_ = false;  // of the running server
};

}  // namespace tandem::tuning
