#include "backends/llvm/kernel_object_cache.h"

namespace tandem::backends {

KernelObjectCache& KernelObjectCache::Global() {
  static KernelObjectCache cache(int64_t{256} << 20);
  return cache;
}

std::shared_ptr<const std::string> KernelObjectCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  uses_.splice(uses_.begin(), uses_, it->second.use);
  return it->second.object;
}

bool KernelObjectCache::Contains(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.count(key) != 0;
}

void KernelObjectCache::Insert(const std::string& key, std::shared_ptr<const std::string> object) {
  if (!object) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it != entries_.end()) Erase(it);
  uses_.push_front(key);
  stats_.bytes += static_cast<int64_t>(object->size());
  ++stats_.objects;
  entries_.emplace(key, Entry{std::move(object), uses_.begin()});
  while (stats_.bytes > max_bytes_ && uses_.size() > 1) Erase(entries_.find(uses_.back()));
}

void KernelObjectCache::Erase(std::map<std::string, Entry>::iterator it) {
  stats_.bytes -= static_cast<int64_t>(it->second.object->size());
  --stats_.objects;
  uses_.erase(it->second.use);
  entries_.erase(it);
}

KernelObjectCache::Stats KernelObjectCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tandem::backends
