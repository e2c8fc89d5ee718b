// Program features and cost models for kernel search.
//
// ExtractFeatures reads a scheduled kernel (after postprocessing) and returns a fixed-length
// vector describing it, in the spirit of Ansor's per-store features: for the buffer stores of
// the kernel, arithmetic counts by kind (float add/mul/fma/div/special, int), loop extents and
// kinds around the store (serial/parallel/vectorized/unrolled, their products), memory access
// patterns of each buffer touched (stride of the innermost loop, bytes, unique bytes, reuse),
// allocation sizes, and vector/unroll/parallel facts. The length is NumFeatures() whatever the
// program; stores beyond what the layout holds are aggregated, never dropped silently.
//
// A CostModel predicts a score per program (higher = faster) and learns from measurements.
// XGBoostModel uses the XGBoost C API (gradient boosted trees, regression on normalized
// throughput: for each workload, best latency / latency); RandomModel scores at random (the
// baseline for comparison). Both save and load their state as bytes (the tuning database stores
// them as blobs).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/kernel/stmt.h"

namespace tandem::tuning {

std::vector<float> ExtractFeatures(const ir::KernelFunction& scheduled_kernel);
// Names of the features, in order (for debugging and reports); size == ExtractFeatures().size().
const std::vector<std::string>& FeatureNames();
// The length of every feature vector (== FeatureNames().size()).
size_t NumFeatures();

// One measured program for training.
struct TrainingExample {
  std::string workload;  // workload hash: throughputs are normalized within a workload
  std::vector<float> features;
  double seconds = 0;  // measured latency; <= 0 or inf: failed (scored as 0)
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Adds examples to what the model has seen and retrains.
  virtual void Update(const std::vector<TrainingExample>& examples) = 0;
  // A score per feature vector; higher is predicted faster. Before any Update, any ordering.
  virtual std::vector<double> Predict(const std::vector<std::vector<float>>& features) = 0;
  virtual std::string Save() const = 0;
  // Restores what Save wrote (Error on malformed bytes).
  virtual void Load(const std::string& bytes) = 0;
};

std::unique_ptr<CostModel> MakeXGBoostModel(uint64_t seed = 0);
std::unique_ptr<CostModel> MakeRandomModel(uint64_t seed = 0);

// Kendall rank correlation between two score lists (+1: same order, -1: reversed).
double KendallTau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tandem::tuning
