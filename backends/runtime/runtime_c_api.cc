// The C API of libtandem_runtime (include/tandem/runtime.h) over ArtifactModel: exceptions
// become status codes and a per-thread message; nothing escapes to the caller.
#include <fmt/format.h>

#include <functional>
#include <map>
#include <new>
#include <string>

#include "backends/runtime/artifact_model.h"
#include "backends/runtime/thread_pool.h"
#include "ir/error.h"
#include "tandem/runtime.h"

struct tandem_model {
  std::unique_ptr<tandem::backends::ArtifactModel> model;
  std::vector<tandem_tensor_info> inputs, outputs;
  std::map<std::string, std::string> manifest;
};

namespace {

using tandem::backends::ArtifactModel;
using tandem::backends::ArtifactTensor;

thread_local std::string last_error;

tandem_status Fail(tandem_status status, const std::string& message) {
  last_error = message;
  return status;
}

// Runs `body`, turning exceptions into a status (`error_status` for ir::Error).
template <typename Body>
tandem_status Guard(tandem_status error_status, Body body) {
  try {
    last_error.clear();
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(TANDEM_ERROR_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(error_status, e.what());
  } catch (...) {
    return Fail(error_status, "an unknown failure");
  }
}

tandem_dtype DtypeOf(const std::string& name) {
  static const std::map<std::string, tandem_dtype> dtypes = {
      {"f32", TANDEM_F32}, {"f64", TANDEM_F64}, {"f16", TANDEM_F16}, {"i8", TANDEM_I8},
      {"u8", TANDEM_U8},   {"i32", TANDEM_I32}, {"i64", TANDEM_I64}, {"bool", TANDEM_BOOL}};
  return dtypes.at(name);  // DecodeArtifactPayload accepts only these
}

tandem_tensor_info InfoOf(const ArtifactTensor& t, int64_t bytes) {
  return tandem_tensor_info{t.name.c_str(), DtypeOf(t.dtype), static_cast<int32_t>(t.shape.size()),
                            t.shape.data(), static_cast<size_t>(bytes)};
}

// tandem_model_load and tandem_model_load_linked: the model `load` gives, with its infos.
tandem_status LoadModel(
    const char* what, int num_threads, tandem_model** model,
    const std::function<std::unique_ptr<ArtifactModel>(ArtifactModel::LoadFailure*)>& load) {
  if (model == nullptr)
    return Fail(TANDEM_ERROR_ARGUMENT, fmt::format("{}: null model pointer", what));
  *model = nullptr;
  if (num_threads < 0 || num_threads > tandem::backends::ThreadPool::kMaxThreads) {
    return Fail(TANDEM_ERROR_ARGUMENT,
                fmt::format("{}: num_threads = {} is outside [0, {}]", what, num_threads,
                            tandem::backends::ThreadPool::kMaxThreads));
  }
  ArtifactModel::LoadFailure failure = ArtifactModel::LoadFailure::kNone;
  tandem_status status = Guard(TANDEM_ERROR_FILE, [&] {
    auto loaded = std::make_unique<tandem_model>();
    loaded->model = load(&failure);
    const ArtifactModel& m = *loaded->model;
    for (size_t i = 0; i < m.inputs().size(); ++i)
      loaded->inputs.push_back(InfoOf(m.inputs()[i], m.input_bytes(i)));
    for (size_t i = 0; i < m.outputs().size(); ++i)
      loaded->outputs.push_back(InfoOf(m.outputs()[i], m.output_bytes(i)));
    const tandem::backends::ArtifactManifest& manifest = m.artifact().manifest;
    loaded->manifest = {
        {"tandem_version", manifest.tandem_version},
        {"target", manifest.target},
        {"pipeline", manifest.pipeline},
        {"trace_hash", manifest.trace_hash},
        {"model_hash", manifest.model_hash},
        {"required_features", fmt::format("{}", fmt::join(manifest.required_features, ","))}};
    if (num_threads > 0) tandem::backends::ThreadPool::Global().SetNumThreads(num_threads);
    *model = loaded.release();
    return TANDEM_OK;
  });
  if (status == TANDEM_ERROR_FILE && failure == ArtifactModel::LoadFailure::kIncompatible) {
    status = TANDEM_ERROR_INCOMPATIBLE;
  }
  return status;
}

}  // namespace

extern "C" {

const char* tandem_last_error(void) {
  return last_error.c_str();
}

tandem_status tandem_model_load(const char* path, int num_threads, tandem_model** model) {
  if (path == nullptr) return Fail(TANDEM_ERROR_ARGUMENT, "tandem_model_load: null path");
  return LoadModel(
      "tandem_model_load", num_threads, model,
      [path](ArtifactModel::LoadFailure* failure) { return ArtifactModel::Load(path, failure); });
}

tandem_status tandem_model_load_linked(const tandem_linked_model* linked, int num_threads,
                                       tandem_model** model) {
  if (linked == nullptr || (linked->num_kernels > 0 && linked->kernels == nullptr)) {
    return Fail(TANDEM_ERROR_ARGUMENT, "tandem_model_load_linked: null linked model");
  }
  return LoadModel("tandem_model_load_linked", num_threads, model,
                   [linked](ArtifactModel::LoadFailure* failure) {
                     std::map<std::string, ArtifactModel::KernelEntry> kernels;
                     for (uint64_t k = 0; k < linked->num_kernels; ++k) {
                       kernels[linked->kernels[k].symbol] = linked->kernels[k].entry;
                     }
                     return ArtifactModel::LoadLinked("(linked)", linked->payload,
                                                      linked->payload_size, kernels, failure);
                   });
}

void tandem_model_free(tandem_model* model) {
  delete model;
}

size_t tandem_model_num_inputs(const tandem_model* model) {
  return model ? model->inputs.size() : 0;
}

size_t tandem_model_num_outputs(const tandem_model* model) {
  return model ? model->outputs.size() : 0;
}

tandem_status tandem_model_input_info(const tandem_model* model, size_t index,
                                      tandem_tensor_info* info) {
  if (model == nullptr || info == nullptr || index >= model->inputs.size()) {
    return Fail(TANDEM_ERROR_ARGUMENT, "tandem_model_input_info: null pointer or no such input");
  }
  *info = model->inputs[index];
  return TANDEM_OK;
}

tandem_status tandem_model_output_info(const tandem_model* model, size_t index,
                                       tandem_tensor_info* info) {
  if (model == nullptr || info == nullptr || index >= model->outputs.size()) {
    return Fail(TANDEM_ERROR_ARGUMENT, "tandem_model_output_info: null pointer or no such output");
  }
  *info = model->outputs[index];
  return TANDEM_OK;
}

const char* tandem_model_manifest(const tandem_model* model, const char* key) {
  if (model == nullptr || key == nullptr) return nullptr;
  auto found = model->manifest.find(key);
  return found == model->manifest.end() ? nullptr : found->second.c_str();
}

tandem_status tandem_model_run(tandem_model* model, const void* const* inputs,
                               void* const* outputs) {
  if (model == nullptr) return Fail(TANDEM_ERROR_ARGUMENT, "tandem_model_run: null model");
  if ((inputs == nullptr && !model->inputs.empty()) ||
      (outputs == nullptr && !model->outputs.empty())) {
    return Fail(TANDEM_ERROR_ARGUMENT, "tandem_model_run: null input or output array");
  }
  for (size_t i = 0; i < model->inputs.size(); ++i) {
    if (inputs[i] == nullptr && model->inputs[i].bytes > 0) {
      return Fail(TANDEM_ERROR_ARGUMENT, fmt::format("tandem_model_run: input {} is null", i));
    }
  }
  for (size_t o = 0; o < model->outputs.size(); ++o) {
    if (outputs[o] == nullptr && model->outputs[o].bytes > 0) {
      return Fail(TANDEM_ERROR_ARGUMENT, fmt::format("tandem_model_run: output {} is null", o));
    }
  }
  return Guard(TANDEM_ERROR_RUN, [&] {
    model->model->Run(inputs, outputs);
    return TANDEM_OK;
  });
}

}  // extern "C"
