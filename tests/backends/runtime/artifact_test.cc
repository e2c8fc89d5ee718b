// Exported artifacts (backends/export/artifact_export.h) loaded through libtandem_runtime's C API
// (include/tandem/runtime.h) and its C++ wrapper: the outputs of the JIT executable, bit for bit,
// at the same thread count; damaged, foreign and incompatible files are errors with a message,
// never a crash; the payload decoder survives mutated descriptions.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backends/export/artifact_export.h"
#include "backends/reference/interpreter.h"
#include "backends/runtime/artifact.h"
#include "backends/runtime/executable.h"
#include "backends/runtime/thread_pool.h"
#include "ir/error.h"
#include "tandem/runtime.h"
#include "tandem/runtime.hpp"
#include "tests/common/temp_path.h"

namespace tandem::backends {
namespace {

ir::TensorType F32(ir::Shape shape) {
  return ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""};
}

// Convolutions with constant weights, a parallel reduction, a tuple of three results, one of
// them an input returned as is (an output copy).
ir::IRModule SmallNetwork() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("image", F32({1, 4, 10, 10}));
  ir::ValueId w = b.Constant(ir::Tensor::Random(F32({8, 4, 3, 3}), 11, -0.3, 0.3), "w");
  ir::ValueId bias = b.Constant(ir::Tensor::Random(F32({8, 1, 1}), 12), "bias");
  ir::Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  ir::ValueId c = b.Call("relu", {b.Call("add", {b.Call("conv2d", {x, w}, pad), bias})});
  ir::ValueId pooled = b.Call("flatten", {b.Call("global_avg_pool2d", {c})});
  ir::ValueId probabilities = b.Call("softmax", {pooled});
  ir::IRModule m;
  m.Add(b.Finish(std::vector<ir::ValueId>{probabilities, c, x}));
  return m;
}

std::string ReadBytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

// `bytes` (an exported library with its trailer) with the trailer recomputed, as a tool that
// rewrites the file on purpose would leave it.
std::string Reseal(std::string bytes) {
  bytes.resize(bytes.size() - kArtifactTrailerBytes);
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  return bytes + ArtifactTrailer(bytes.size(), ArtifactChecksum(data, bytes.size()));
}

struct Exported {
  std::filesystem::path path;
  ir::IRModule module;
};

const Exported& SmallNetworkArtifact() {
  // Removed when the test program exits.
  static const testing::ScopedTempPath library("tandem_artifact_test.so");
  static const Exported exported = [] {
    Exported e{library.path(), SmallNetwork()};
    ExportOptions options;
    options.path = e.path.string();
    options.pipeline = "none";
    options.target = "host";
    ExportArtifact(e.module, BuildOptions{}, options);
    return e;
  }();
  return exported;
}

tandem_status LoadStatus(const std::filesystem::path& path, std::string* message = nullptr) {
  tandem_model* model = nullptr;
  tandem_status status = tandem_model_load(path.c_str(), 0, &model);
  if (message) *message = tandem_last_error();
  tandem_model_free(model);
  return status;
}

TEST(Artifact, RunsBitForBitAsTheJitExecutable) {
  const Exported& e = SmallNetworkArtifact();
  ThreadPool::Global().SetNumThreads(2);
  Model model(e.path.string(), /*num_threads=*/2);
  ASSERT_EQ(model.inputs().size(), 1u);
  ASSERT_EQ(model.outputs().size(), 3u);
  EXPECT_STREQ(model.inputs()[0].name, "image");
  EXPECT_EQ(model.inputs()[0].dtype, TANDEM_F32);
  ASSERT_EQ(model.inputs()[0].rank, 4);
  EXPECT_EQ(model.inputs()[0].shape[3], 10);
  EXPECT_EQ(model.inputs()[0].bytes, 400u * sizeof(float));
  EXPECT_EQ(model.manifest("pipeline"), "none");
  EXPECT_FALSE(model.manifest("required_features").empty());

  auto jit = Build(e.module);
  for (uint64_t seed : {1, 2}) {
    std::vector<ir::Tensor> inputs = RandomInputs(e.module.Get("main"), seed);
    std::vector<ir::Tensor> want = jit->Run(inputs);
    std::vector<ir::Tensor> got;
    for (const ir::Tensor& t : want) got.emplace_back(t.type());
    std::vector<void*> outputs;
    for (ir::Tensor& t : got) outputs.push_back(const_cast<void*>(t.raw_data()));
    model.Run({inputs[0].raw_data()}, outputs);
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(got[o].num_bytes(), want[o].num_bytes());
      EXPECT_EQ(std::memcmp(got[o].raw_data(), want[o].raw_data(), want[o].num_bytes()), 0)
          << "output " << o << ", seed " << seed;
    }
    std::vector<ir::Tensor> reference = RunReference(e.module, inputs);
    EXPECT_LT(ir::RelativeError(got[0], reference[0]), 1e-5);
  }
}

TEST(Artifact, StagesUnalignedBuffers) {
  const Exported& e = SmallNetworkArtifact();
  Model model(e.path.string());
  std::vector<ir::Tensor> inputs = RandomInputs(e.module.Get("main"), 3);
  std::vector<ir::Tensor> want = Build(e.module)->Run(inputs);
  // Every buffer one float past a 64-byte boundary.
  std::vector<std::vector<float>> storage;
  storage.emplace_back(inputs[0].num_elements() + 32);
  float* input = storage.back().data() + 1;
  std::memcpy(input, inputs[0].raw_data(), inputs[0].num_bytes());
  std::vector<void*> outputs;
  for (const ir::Tensor& t : want) {
    storage.emplace_back(t.num_elements() + 32);
    outputs.push_back(storage.back().data() + 1);
  }
  model.Run({input}, outputs);
  for (size_t o = 0; o < want.size(); ++o) {
    EXPECT_EQ(std::memcmp(outputs[o], want[o].raw_data(), want[o].num_bytes()), 0) << o;
  }
}

TEST(Artifact, BadFilesAreErrorsWithMessages) {
  const Exported& e = SmallNetworkArtifact();
  const std::string good = ReadBytes(e.path);
  std::filesystem::path bad = testing::UniqueTempPath("tandem_bad_artifact.so");
  std::string message;

  EXPECT_EQ(LoadStatus("/nonexistent/model.so", &message), TANDEM_ERROR_FILE);
  EXPECT_NE(message.find("/nonexistent/model.so"), std::string::npos) << message;

  WriteBytes(bad, "not a library at all");
  EXPECT_EQ(LoadStatus(bad, &message), TANDEM_ERROR_FILE);
  EXPECT_NE(message.find("not an ELF file"), std::string::npos) << message;

  WriteBytes(bad, good.substr(0, good.size() / 2));
  EXPECT_EQ(LoadStatus(bad, &message), TANDEM_ERROR_FILE);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;

  std::string flipped = good;
  flipped[flipped.size() / 3] ^= 0x40;
  WriteBytes(bad, flipped);
  EXPECT_EQ(LoadStatus(bad, &message), TANDEM_ERROR_FILE);
  EXPECT_NE(message.find("checksum"), std::string::npos) << message;

  // Another architecture (AArch64's ELF machine number), sealed again.
  std::string foreign = good;
  foreign[18] = static_cast<char>(183);
  foreign[19] = 0;
  WriteBytes(bad, Reseal(foreign));
  EXPECT_EQ(LoadStatus(bad, &message), TANDEM_ERROR_INCOMPATIBLE);
  EXPECT_NE(message.find("AArch64"), std::string::npos) << message;

  // Another payload format version.
  std::string versioned = good;
  size_t payload = versioned.find(std::string(kArtifactMagic, 8));
  ASSERT_NE(payload, std::string::npos);
  versioned[payload + 8] = static_cast<char>(kArtifactFormatVersion + 1);
  WriteBytes(bad, Reseal(versioned));
  EXPECT_EQ(LoadStatus(bad, &message), TANDEM_ERROR_INCOMPATIBLE);
  EXPECT_NE(message.find("format version"), std::string::npos) << message;

  // A required CPU feature this machine does not have (a name no CPU has).
  std::string needs = good;
  size_t feature = needs.find("\"required_features\":[\"");
  ASSERT_NE(feature, std::string::npos);
  needs[feature + 22] = '_';
  WriteBytes(bad, Reseal(needs));
  EXPECT_EQ(LoadStatus(bad, &message), TANDEM_ERROR_INCOMPATIBLE);
  EXPECT_NE(message.find("lacks"), std::string::npos) << message;

  // The C++ wrapper throws the status and the message.
  try {
    Model model(bad.string());
    ADD_FAILURE() << "loaded an artifact needing a CPU feature no machine has";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.status(), TANDEM_ERROR_INCOMPATIBLE);
  }
  std::filesystem::remove(bad);
}

TEST(Artifact, ApiArgumentsAreChecked) {
  tandem_model* model = nullptr;
  EXPECT_EQ(tandem_model_load(nullptr, 0, &model), TANDEM_ERROR_ARGUMENT);
  EXPECT_EQ(tandem_model_load(SmallNetworkArtifact().path.c_str(), -1, &model),
            TANDEM_ERROR_ARGUMENT);
  ASSERT_EQ(tandem_model_load(SmallNetworkArtifact().path.c_str(), 0, &model), TANDEM_OK)
      << tandem_last_error();
  tandem_tensor_info info;
  EXPECT_EQ(tandem_model_input_info(model, 1, &info), TANDEM_ERROR_ARGUMENT);
  EXPECT_EQ(tandem_model_run(model, nullptr, nullptr), TANDEM_ERROR_ARGUMENT);
  EXPECT_EQ(tandem_model_manifest(model, "no such key"), nullptr);
  tandem_model_free(model);
}

// A linked model (tandem export --format object) whose table lacks a kernel, or whose payload is
// not one, is an error naming it.
TEST(Artifact, LinkedModelsAreChecked) {
  tandem_model* model = nullptr;
  EXPECT_EQ(tandem_model_load_linked(nullptr, 0, &model), TANDEM_ERROR_ARGUMENT);
  const uint8_t garbage[64] = {1, 2, 3};
  tandem_linked_model bad{garbage, sizeof(garbage), 0, nullptr};
  EXPECT_EQ(tandem_model_load_linked(&bad, 0, &model), TANDEM_ERROR_FILE);
  EXPECT_NE(std::string(tandem_last_error()).find("not a Tandem artifact"), std::string::npos)
      << tandem_last_error();
  // The payload of the exported library, with no kernels in the table.
  const std::string bytes = ReadBytes(SmallNetworkArtifact().path);
  size_t start = bytes.find(std::string(kArtifactMagic, 8));
  ASSERT_NE(start, std::string::npos);
  tandem_linked_model no_kernels{reinterpret_cast<const uint8_t*>(bytes.data()) + start,
                                 bytes.size() - kArtifactTrailerBytes - start, 0, nullptr};
  EXPECT_EQ(tandem_model_load_linked(&no_kernels, 0, &model), TANDEM_ERROR_FILE);
  EXPECT_NE(std::string(tandem_last_error()).find("has no code for kernel"), std::string::npos)
      << tandem_last_error();
  EXPECT_EQ(model, nullptr);
}

// Mutated files (bit flips, truncations, appended bytes) never load and never crash.
TEST(Artifact, MutatedFilesAreRejected) {
  const std::string good = ReadBytes(SmallNetworkArtifact().path);
  std::filesystem::path bad = testing::UniqueTempPath("tandem_mutated_artifact.so");
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = good;
    switch (trial % 3) {
      case 0:
        for (int flips = 1 + static_cast<int>(random() % 4); flips > 0; --flips) {
          bytes[random() % bytes.size()] ^= static_cast<char>(1 << (random() % 8));
        }
        break;
      case 1:
        bytes.resize(random() % bytes.size());
        break;
      case 2:
        bytes += std::string(1 + random() % 64, static_cast<char>(random()));
        break;
    }
    WriteBytes(bad, bytes);
    std::string message;
    tandem_status status = LoadStatus(bad, &message);
    EXPECT_NE(status, TANDEM_OK) << "trial " << trial;
    EXPECT_FALSE(message.empty()) << "trial " << trial;
  }
  std::filesystem::remove(bad);
}

// Mutated descriptions (with the file sealed again, as a hostile rewrite would) decode to an
// error or to a description the runner can use; the decoder never reads out of bounds.
TEST(Artifact, MutatedDescriptionsDecodeOrFailCleanly) {
  const std::string good = ReadBytes(SmallNetworkArtifact().path);
  size_t start = good.find(std::string(kArtifactMagic, 8));
  ASSERT_NE(start, std::string::npos);
  uint64_t length = 0;
  std::memcpy(&length, good.data() + start + 16, 8);
  std::string payload = good.substr(start, good.size() - kArtifactTrailerBytes - start);
  std::mt19937_64 random(11);
  const std::string alphabet = "0123456789-\"[]{},:e";
  int decoded = 0;
  for (int trial = 0; trial < 500; ++trial) {
    std::string mutated = payload;
    for (int edits = 1 + static_cast<int>(random() % 3); edits > 0; --edits) {
      size_t at = 24 + random() % length;
      mutated[at] = alphabet[random() % alphabet.size()];
    }
    try {
      Artifact a =
          DecodeArtifactPayload(reinterpret_cast<const uint8_t*>(mutated.data()), mutated.size());
      ++decoded;
      for (const ArtifactCall& call : a.calls) {
        for (int arg : call.args) EXPECT_LT(arg, static_cast<int>(a.slots.size()));
      }
    } catch (const ir::Error& error) {
      EXPECT_FALSE(std::string(error.what()).empty());
    }
  }
  EXPECT_LT(decoded, 500);  // most edits break something the decoder checks
}

}  // namespace
}  // namespace tandem::backends
