// KernelObjectCache: kernels compiled to object code, kept process-wide and keyed by what the
// code depends on (the kernel's structure and the code generation settings, not its name).
//
// Graph-level tuning builds many candidate modules that share most of their kernels (placements
// differing in a few pieces, layouts with the same epilogues), and LLVM's optimization and code
// generation are most of a build's time: CompileKernels compiles each distinct kernel once and
// links its cached object into every later module. Thread-safe (LocalBuilder builds on several
// threads); bounded, the least recently used objects dropped past a byte budget.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tandem::backends {

class KernelObjectCache {
 public:
  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t objects = 0;
    int64_t bytes = 0;
  };

  explicit KernelObjectCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // The cache CompileKernels uses (256 MiB).
  static KernelObjectCache& Global();

  // The object compiled under `key`, or null (counted as a miss).
  std::shared_ptr<const std::string> Find(const std::string& key);
  // Whether an object is kept under `key`; neither a hit nor a miss, nor a use.
  bool Contains(const std::string& key) const;
  // Keeps `object` under `key` (replacing any), then drops least recently used objects while
  // the total exceeds the budget (never the one just inserted).
  void Insert(const std::string& key, std::shared_ptr<const std::string> object);

  Stats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const std::string> object;
    std::list<std::string>::iterator use;  // position in uses_
  };

  void Erase(std::map<std::string, Entry>::iterator it);

  mutable std::mutex mutex_;
  int64_t max_bytes_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> uses_;  // most recent first
  Stats stats_;
};

}  // namespace tandem::backends
