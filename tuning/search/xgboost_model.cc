// Cost models: gradient boosted trees through the XGBoost C API, a random baseline, and the
// Kendall rank correlation used to evaluate them.
//
// Saved form of the XGBoost model (host byte order):
//   "TNDMXGB1" | u64 seed | u64 example count | examples | u64 model size | model bytes
// where an example is u64 workload size | workload bytes | u64 feature count | f32 features |
// f64 seconds, and the model bytes are XGBoost's own UBJSON model (empty before training).
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>

#include "ir/error.h"
#include "tuning/search/cost_model.h"

namespace tandem::tuning {

namespace {

constexpr std::string_view kMagic = "TNDMXGB1";
constexpr int kBoostRounds = 80;

void CheckXgb(int status, const char* call) {
  if (status != 0) {
    throw ir::Error(std::string("XGBoost ") + call + " failed: " + XGBGetLastError());
  }
}

bool Failed(double seconds) {
  return !(seconds > 0) || !std::isfinite(seconds);
}

// Owns a DMatrix handle.
class Matrix {
 public:
  Matrix(const std::vector<float>& values, size_t rows, size_t columns) {
    CheckXgb(XGDMatrixCreateFromMat(values.data(), rows, columns,
                                    std::numeric_limits<float>::quiet_NaN(), &handle_),
             "XGDMatrixCreateFromMat");
  }
  ~Matrix() { XGDMatrixFree(handle_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// Owns a Booster handle.
class Booster {
 public:
  explicit Booster(const std::vector<DMatrixHandle>& cache) {
    CheckXgb(XGBoosterCreate(cache.data(), cache.size(), &handle_), "XGBoosterCreate");
  }
  ~Booster() { XGBoosterFree(handle_); }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  BoosterHandle get() const { return handle_; }
  void Set(const char* name, const std::string& value) {
    CheckXgb(XGBoosterSetParam(handle_, name, value.c_str()), "XGBoosterSetParam");
  }

 private:
  BoosterHandle handle_ = nullptr;
};

class Writer {
 public:
  template <typename T>
  void Put(const T& value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void PutBytes(const void* data, size_t size) {
    Put<uint64_t>(size);
    bytes_.append(static_cast<const char*>(data), size);
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    Need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }
  std::string GetBytes(size_t element_size = 1) {
    uint64_t count = Get<uint64_t>();
    if (count > bytes_.size() / element_size) Malformed();
    Need(count * element_size);
    std::string out = bytes_.substr(position_, count * element_size);
    position_ += count * element_size;
    return out;
  }
  bool done() const { return position_ == bytes_.size(); }
  [[noreturn]] static void Malformed() {
    throw ir::Error("XGBoost cost model: malformed saved bytes (truncated or not a saved model)");
  }

 private:
  void Need(size_t size) const {
    if (size > bytes_.size() - position_) Malformed();
  }
  const std::string& bytes_;
  size_t position_ = 0;
};

class XGBoostModel : public CostModel {
 public:
  explicit XGBoostModel(uint64_t seed) : seed_(seed) {}

  std::string name() const override { return "xgboost"; }

  void Update(const std::vector<TrainingExample>& examples) override {
    for (const TrainingExample& example : examples) {
      CheckWidth(example.features.size(), "training example");
    }
    examples_.insert(examples_.end(), examples.begin(), examples.end());
    Train();
  }

  std::vector<double> Predict(const std::vector<std::vector<float>>& features) override {
    std::vector<double> scores(features.size(), 0);
    if (!booster_ || features.empty()) return scores;
    std::vector<float> values;
    values.reserve(features.size() * width_);
    for (const std::vector<float>& row : features) {
      CheckWidth(row.size(), "feature vector");
      values.insert(values.end(), row.begin(), row.end());
    }
    Matrix matrix(values, features.size(), width_);
    bst_ulong length = 0;
    const float* result = nullptr;
    CheckXgb(XGBoosterPredict(booster_->get(), matrix.get(), 0, 0, 0, &length, &result),
             "XGBoosterPredict");
    if (length != features.size()) {
      throw ir::Error("XGBoost cost model: prediction returned " + std::to_string(length) +
                      " values for " + std::to_string(features.size()) + " programs");
    }
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = result[i];
    return scores;
  }

  std::string Save() const override {
    Writer writer;
    writer.bytes().append(kMagic);
    writer.Put<uint64_t>(seed_);
    writer.Put<uint64_t>(examples_.size());
    for (const TrainingExample& example : examples_) {
      writer.PutBytes(example.workload.data(), example.workload.size());
      writer.Put<uint64_t>(example.features.size());
      writer.bytes().append(reinterpret_cast<const char*>(example.features.data()),
                            example.features.size() * sizeof(float));
      writer.Put<double>(example.seconds);
    }
    if (booster_) {
      bst_ulong length = 0;
      const char* data = nullptr;
      CheckXgb(XGBoosterSaveModelToBuffer(booster_->get(), R"({"format": "ubj"})", &length, &data),
               "XGBoosterSaveModelToBuffer");
      writer.PutBytes(data, length);
    } else {
      writer.Put<uint64_t>(0);
    }
    return std::move(writer.bytes());
  }

  void Load(const std::string& bytes) override {
    if (bytes.compare(0, kMagic.size(), kMagic) != 0) Reader::Malformed();
    Reader reader(bytes);
    for (size_t i = 0; i < kMagic.size(); ++i) reader.Get<char>();
    uint64_t seed = reader.Get<uint64_t>();
    uint64_t count = reader.Get<uint64_t>();
    if (count > bytes.size()) Reader::Malformed();
    std::vector<TrainingExample> examples(count);
    size_t width = 0;
    for (TrainingExample& example : examples) {
      example.workload = reader.GetBytes();
      std::string floats = reader.GetBytes(sizeof(float));
      example.features.resize(floats.size() / sizeof(float));
      std::memcpy(example.features.data(), floats.data(), floats.size());
      example.seconds = reader.Get<double>();
      if (width != 0 && example.features.size() != width) Reader::Malformed();
      width = example.features.size();
    }
    std::string model = reader.GetBytes();
    if (!reader.done()) Reader::Malformed();

    std::unique_ptr<Booster> booster;
    if (!model.empty()) {
      if (examples.empty()) Reader::Malformed();
      booster = std::make_unique<Booster>(std::vector<DMatrixHandle>{});
      CheckXgb(XGBoosterLoadModelFromBuffer(booster->get(), model.data(), model.size()),
               "XGBoosterLoadModelFromBuffer");
      booster->Set("nthread", "1");
    }
    seed_ = seed;
    examples_ = std::move(examples);
    width_ = width;
    booster_ = std::move(booster);
  }

 private:
  void CheckWidth(size_t width, const char* what) {
    if (width == 0) throw ir::Error(std::string("XGBoost cost model: empty ") + what);
    if (width_ == 0) width_ = width;
    if (width != width_) {
      throw ir::Error(std::string("XGBoost cost model: ") + what + " has " + std::to_string(width) +
                      " features, expected " + std::to_string(width_));
    }
  }

  void Train() {
    if (examples_.empty()) return;
    // Normalized throughput: best latency of the workload / latency (0 for failures).
    std::map<std::string, double> best;
    for (const TrainingExample& example : examples_) {
      if (Failed(example.seconds)) continue;
      auto [it, inserted] = best.emplace(example.workload, example.seconds);
      if (!inserted) it->second = std::min(it->second, example.seconds);
    }
    std::vector<float> values;
    std::vector<float> labels;
    values.reserve(examples_.size() * width_);
    for (const TrainingExample& example : examples_) {
      values.insert(values.end(), example.features.begin(), example.features.end());
      labels.push_back(Failed(example.seconds)
                           ? 0.0f
                           : static_cast<float>(best.at(example.workload) / example.seconds));
    }
    Matrix matrix(values, examples_.size(), width_);
    CheckXgb(XGDMatrixSetFloatInfo(matrix.get(), "label", labels.data(), labels.size()),
             "XGDMatrixSetFloatInfo");
    auto booster = std::make_unique<Booster>(std::vector<DMatrixHandle>{matrix.get()});
    booster->Set("objective", "reg:squarederror");
    // Shallow trees on a fifth of the features per tree: measured on held-out schedules of
    // matmul and conv2d with ~100 training programs, these rank better than deeper trees on
    // all features (Kendall tau 0.49 vs 0.43), which overfit.
    booster->Set("max_depth", "6");
    booster->Set("eta", "0.2");
    booster->Set("min_child_weight", "1");
    booster->Set("colsample_bytree", "0.2");
    booster->Set("tree_method", "exact");
    booster->Set("nthread", "1");
    booster->Set("verbosity", "0");
    booster->Set("seed", std::to_string(seed_ % 2147483647));
    for (int round = 0; round < kBoostRounds; ++round) {
      CheckXgb(XGBoosterUpdateOneIter(booster->get(), round, matrix.get()),
               "XGBoosterUpdateOneIter");
    }
    booster_ = std::move(booster);
  }

  uint64_t seed_;
  std::vector<TrainingExample> examples_;
  size_t width_ = 0;
  std::unique_ptr<Booster> booster_;
};

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Scores each program by a hash of its features and the seed: the same program always gets the
// same score, unrelated to its speed.
class RandomModel : public CostModel {
 public:
  explicit RandomModel(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "random"; }
  void Update(const std::vector<TrainingExample>&) override {}
  std::vector<double> Predict(const std::vector<std::vector<float>>& features) override {
    std::vector<double> scores;
    scores.reserve(features.size());
    for (const std::vector<float>& row : features) {
      uint64_t h = Mix(seed_);
      for (float value : row) {
        uint32_t bits = 0;
        std::memcpy(&bits, &value, sizeof(bits));
        h = Mix(h ^ bits);
      }
      scores.push_back(static_cast<double>(h >> 11) * 0x1.0p-53);
    }
    return scores;
  }
  std::string Save() const override {
    std::string bytes = "TNDMRND1";
    bytes.append(reinterpret_cast<const char*>(&seed_), sizeof(seed_));
    return bytes;
  }
  void Load(const std::string& bytes) override {
    if (bytes.size() != 8 + sizeof(seed_) || bytes.compare(0, 8, "TNDMRND1") != 0) {
      throw ir::Error("random cost model: malformed saved bytes");
    }
    std::memcpy(&seed_, bytes.data() + 8, sizeof(seed_));
  }

 private:
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<CostModel> MakeXGBoostModel(uint64_t seed) {
  return std::make_unique<XGBoostModel>(seed);
}

std::unique_ptr<CostModel> MakeRandomModel(uint64_t seed) {
  return std::make_unique<RandomModel>(seed);
}

double KendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) {
    throw ir::Error("KendallTau: score lists differ in length (" + std::to_string(a.size()) +
                    " vs " + std::to_string(b.size()) + ")");
  }
  // tau-b = (concordant - discordant) / sqrt((n0 - ties_a) * (n0 - ties_b)).
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0, pairs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      pairs += 1;
      double da = a[i] - a[j];
      double db = b[i] - b[j];
      if (da == 0) ties_a += 1;
      if (db == 0) ties_b += 1;
      if (da == 0 || db == 0) continue;
      ((da > 0) == (db > 0) ? concordant : discordant) += 1;
    }
  }
  double denominator = std::sqrt((pairs - ties_a) * (pairs - ties_b));
  if (!(denominator > 0)) return 0;
  return (concordant - discordant) / denominator;
}

}  // namespace tandem::tuning
