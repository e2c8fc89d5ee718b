#include "passes/heuristic/constant_fold_memo.h"

#include <fmt/format.h>

#include <list>
#include <mutex>
#include <unordered_map>

#include "ir/op_registry.h"

namespace tandem::passes {

namespace {

// Results below this size are evaluated again: a key costs about as much as folding them.
constexpr int64_t kMinimumBytes = 4096;
constexpr int64_t kCapacityBytes = int64_t{1024} << 20;

struct Entry {
  std::string key;
  std::vector<ir::Tensor> operands;  // kept alive: their storage identifies them
  std::vector<ir::Tensor> results;
  int64_t bytes = 0;
};

class ConstantFoldMemo {
 public:
  static ConstantFoldMemo& Global() {
    static ConstantFoldMemo memo;
    return memo;
  }

  std::vector<ir::Tensor> Fold(const std::string& op, const std::vector<ir::Tensor>& operands,
                               const ir::Attrs& attrs, const ir::Type& type) {
    int64_t result_bytes = 0;
    if (type.is_tensor()) {
      result_bytes = type.tensor().num_bytes();
    } else {
      for (const ir::Type& field : type.fields()) {
        result_bytes += field.is_tensor() ? field.tensor().num_bytes() : 0;
      }
    }
    bool memoizable = result_bytes >= kMinimumBytes && result_bytes <= kCapacityBytes / 4;
    for (const ir::Tensor& operand : operands) memoizable &= operand.raw_data() != nullptr;
    if (!memoizable) return ir::EvaluateReference(op, operands, attrs, type);

    std::string key = fmt::format("{}|{}|{}", op, ir::ToString(attrs), ir::ToString(type));
    for (const ir::Tensor& operand : operands) {
      key += fmt::format("|{}:{}", operand.raw_data(), ir::ToString(operand.type()));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = index_.find(key);
      if (found != index_.end()) {
        entries_.splice(entries_.begin(), entries_, found->second);
        ++stats_.hits;
        return found->second->results;
      }
      ++stats_.misses;
    }
    std::vector<ir::Tensor> results = ir::EvaluateReference(op, operands, attrs, type);
    std::lock_guard<std::mutex> lock(mutex_);
    if (index_.count(key) == 0) {
      entries_.push_front(Entry{key, operands, results, result_bytes});
      index_[key] = entries_.begin();
      stats_.bytes += result_bytes;
      while (stats_.bytes > kCapacityBytes && !entries_.empty()) {
        stats_.bytes -= entries_.back().bytes;
        index_.erase(entries_.back().key);
        entries_.pop_back();
      }
    }
    return results;
  }

  ConstantFoldMemoStats Statistics() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  ConstantFoldMemoStats stats_;
};

}  // namespace

std::vector<ir::Tensor> FoldWithMemo(const std::string& op, const std::vector<ir::Tensor>& operands,
                                     const ir::Attrs& attrs, const ir::Type& type) {
  return ConstantFoldMemo::Global().Fold(op, operands, attrs, type);
}

ConstantFoldMemoStats ConstantFoldMemoStatistics() {
  return ConstantFoldMemo::Global().Statistics();
}

}  // namespace tandem::passes
