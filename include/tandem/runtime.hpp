// A thin C++ wrapper over Tandem's runtime C API (tandem/runtime.h): a model that frees itself,
// failures thrown as tandem::RuntimeError carrying the status and the message.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tandem/runtime.h"

namespace tandem {

class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(tandem_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  tandem_status status() const { return status_; }

 private:
  tandem_status status_;
};

inline void CheckStatus(tandem_status status) {
  if (status != TANDEM_OK) throw RuntimeError(status, tandem_last_error());
}

class Model {
 public:
  // Loads an exported model (see tandem_model_load).
  explicit Model(const std::string& path, int num_threads = 0) {
    CheckStatus(tandem_model_load(path.c_str(), num_threads, &model_));
  }
  ~Model() { tandem_model_free(model_); }
  // Loads a model linked into the program (see tandem_model_load_linked).
  explicit Model(const tandem_linked_model& linked, int num_threads = 0) {
    CheckStatus(tandem_model_load_linked(&linked, num_threads, &model_));
  }
  Model(Model&& other) noexcept : model_(std::exchange(other.model_, nullptr)) {}
  Model& operator=(Model&& other) noexcept {
    std::swap(model_, other.model_);
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::vector<tandem_tensor_info> inputs() const {
    return Infos(tandem_model_num_inputs(model_), tandem_model_input_info);
  }
  std::vector<tandem_tensor_info> outputs() const {
    return Infos(tandem_model_num_outputs(model_), tandem_model_output_info);
  }
  // A manifest entry, "" when absent.
  std::string manifest(const std::string& key) const {
    const char* value = tandem_model_manifest(model_, key.c_str());
    return value ? value : "";
  }
  // Runs on raw buffers (see tandem_model_run).
  void Run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
    if (inputs.size() != tandem_model_num_inputs(model_) ||
        outputs.size() != tandem_model_num_outputs(model_)) {
      throw RuntimeError(TANDEM_ERROR_ARGUMENT, "wrong number of input or output buffers");
    }
    CheckStatus(tandem_model_run(model_, inputs.data(), outputs.data()));
  }

 private:
  using InfoFunction = tandem_status (*)(const tandem_model*, size_t, tandem_tensor_info*);
  std::vector<tandem_tensor_info> Infos(size_t count, InfoFunction get) const {
    std::vector<tandem_tensor_info> out(count);
    for (size_t i = 0; i < count; ++i) CheckStatus(get(model_, i, &out[i]));
    return out;
  }

  tandem_model* model_ = nullptr;
};

}  // namespace tandem
