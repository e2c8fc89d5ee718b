// The token-input GPT example (examples/models/gpt_tokens/): the committed model is the one
// BuildGptTokensModel writes; its stored logits at sequence lengths 16, 77 and 128 match both an
// independent computation and the reference interpreter on the model imported at that length;
// the causal mask works (a token changes the logits at its position and after, never before)
// and so does the padding mask (a padded token changes no other position); default_heuristic
// compiles it to the same results at each length; and one dynamic build over sequence lengths
// 1..128 runs every length to the stored outputs and to the interpreter (of the model with its
// query/key/value cut by Slice nodes: the committed model's Split is refused, a pinned error).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backends/reference/interpreter.h"
#include "backends/runtime/dynamic_executable.h"
#include "backends/runtime/executable.h"
#include "examples/models/gpt_tokens/gpt_tokens_model.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tests/pipelines/token_models.h"

namespace tandem {
namespace {

const testing::TokenExample kGpt{"gpt_tokens"};
constexpr int64_t kVocabulary = 500;

using Model = std::function<ir::Tensor(const std::vector<ir::Tensor>&)>;

// The largest absolute difference of the logits at `position` ([1, S, vocabulary]).
double PositionDifference(const ir::Tensor& a, const ir::Tensor& b, int64_t position) {
  double largest = 0;
  for (int64_t t = 0; t < kVocabulary; ++t) {
    int64_t i = position * kVocabulary + t;
    largest = std::max(largest, std::abs(static_cast<double>(a.data<float>()[i]) -
                                         static_cast<double>(b.data<float>()[i])));
  }
  return largest;
}

// Changing the token at `t` of the stored length-16 inputs (12 valid positions, 4 padded) leaves
// the logits before t as they were and changes those at t and after (the padded positions too:
// their queries see every valid key, t's among them).
void ExpectCausal(const Model& run) {
  std::vector<ir::Tensor> inputs = kGpt.Stored(16, "input");
  ir::Tensor before = run(inputs);
  for (int64_t t : {0, 5, 11}) {
    SCOPED_TRACE("token " + std::to_string(t) + " changed");
    ir::Tensor ids = inputs[0].Clone();
    ids.data<int64_t>()[t] = (ids.data<int64_t>()[t] + 17) % kVocabulary;
    ir::Tensor after = run({ids, inputs[1]});
    for (int64_t position = 0; position < 16; ++position) {
      if (position < t) {
        EXPECT_LE(PositionDifference(before, after, position), 1e-5) << "position " << position;
      } else {
        EXPECT_GT(PositionDifference(before, after, position), 1e-2) << "position " << position;
      }
    }
  }
}

// A padded token changes no other position's logits: those at the end of the stored length-16
// inputs (which the causal mask alone hides from the valid positions before them), and one in
// the middle (position 3), which the positions after it would see if the padding mask did not
// hide it.
void ExpectPaddingHidden(const Model& run) {
  std::vector<ir::Tensor> inputs = kGpt.Stored(16, "input");
  ir::Tensor before = run(inputs);
  ir::Tensor ids = inputs[0].Clone();
  for (int64_t i = 12; i < 16; ++i) {
    ids.data<int64_t>()[i] = (ids.data<int64_t>()[i] + 29) % kVocabulary;
  }
  ir::Tensor after = run({ids, inputs[1]});
  for (int64_t position = 0; position < 12; ++position) {
    EXPECT_LE(PositionDifference(before, after, position), 1e-5) << "position " << position;
  }
  ir::Tensor hole = inputs[1].Clone();
  hole.data<int64_t>()[3] = 0;
  ir::Tensor with_hole = run({inputs[0], hole});
  ids = inputs[0].Clone();
  ids.data<int64_t>()[3] = (ids.data<int64_t>()[3] + 17) % kVocabulary;
  ir::Tensor changed = run({ids, hole});
  for (int64_t position = 0; position < 16; ++position) {
    if (position == 3) {
      EXPECT_GT(PositionDifference(with_hole, changed, position), 1e-2);  // its own query
    } else {
      EXPECT_LE(PositionDifference(with_hole, changed, position), 1e-5) << "position " << position;
    }
  }
  // Without the hole the same change reaches the positions after it.
  EXPECT_GT(PositionDifference(before, run({ids, inputs[1]}), 4), 1e-2);
}

TEST(GptTokens, CommittedModelIsTheGeneratedOne) {
  kGpt.ExpectCommittedModelIs(examples::BuildGptTokensModel().SerializeAsString(),
                              "BuildGptTokensModel");
}

TEST(GptTokens, StoredOutputsMatchTheIndependentComputationAndTheInterpreter) {
  onnx::ModelProto model = examples::BuildGptTokensModel();
  std::string bytes = kGpt.ModelBytes();
  for (int64_t length : {16, 77, 128}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    std::vector<ir::Tensor> inputs = kGpt.Stored(length, "input");
    ASSERT_EQ(inputs.size(), 2u);
    ASSERT_EQ(inputs[0].dtype(), ir::DataType::kInt64);
    ASSERT_EQ(inputs[0].shape(), (ir::Shape{1, length}));
    ir::Tensor stored = kGpt.Stored(length, "output").at(0);
    ASSERT_EQ(stored.shape(), (ir::Shape{1, length, kVocabulary}));
    ir::Tensor independent = examples::GptTokensReference(model, inputs[0], inputs[1]);
    EXPECT_LT(ir::RelativeError(stored, independent), 1e-5);
    ir::IRModule module = kGpt.ImportAt(bytes, length);
    // The token embedding; positions and the causal window fold at import.
    EXPECT_EQ(testing::CountCalls(module, "gather"), 1);
    EXPECT_EQ(testing::CountCalls(module, "where"), 2);
    EXPECT_LT(ir::RelativeError(backends::RunReference(module, inputs).at(0), stored), 1e-6);
  }
}

TEST(GptTokens, TheInterpreterIsCausalAndHidesPadding) {
  ir::IRModule module = kGpt.ImportAt(kGpt.ModelBytes(), 16);
  Model run = [&](const std::vector<ir::Tensor>& inputs) {
    return backends::RunReference(module, inputs).at(0);
  };
  ExpectCausal(run);
  ExpectPaddingHidden(run);
  // The independent computation agrees on a mask with a hole.
  std::vector<ir::Tensor> inputs = kGpt.Stored(16, "input");
  inputs[1].data<int64_t>()[3] = 0;
  EXPECT_LT(
      ir::RelativeError(run(inputs), examples::GptTokensReference(examples::BuildGptTokensModel(),
                                                                  inputs[0], inputs[1])),
      1e-5);
}

TEST(GptTokens, DefaultHeuristicMatchesTheInterpreterAtEachLength) {
  std::string bytes = kGpt.ModelBytes();
  for (int64_t length : {16, 77, 128}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    ir::IRModule module = kGpt.ImportAt(bytes, length);
    std::unique_ptr<backends::Executable> executable = testing::CompileDefaultHeuristic(module);
    std::vector<ir::Tensor> inputs = kGpt.Stored(length, "input");
    ir::Tensor compiled = executable->Run(inputs).at(0);
    EXPECT_LT(ir::RelativeError(compiled, backends::RunReference(module, inputs).at(0)), 1e-4);
    EXPECT_LT(ir::RelativeError(compiled, kGpt.Stored(length, "output").at(0)), 1e-4);
    // Random ids, negative ones included (they count from the end of the vocabulary).
    ir::Tensor ids = ir::Tensor::Random(inputs[0].type(), 7, -kVocabulary, kVocabulary);
    EXPECT_LT(ir::RelativeError(executable->Run({ids, inputs[1]}).at(0),
                                backends::RunReference(module, {ids, inputs[1]}).at(0)),
              1e-4);
    if (length == 16) {
      Model run = [&](const std::vector<ir::Tensor>& given) {
        return executable->Run(given).at(0);
      };
      ExpectCausal(run);
      ExpectPaddingHidden(run);
    }
  }
}

// One build for every sequence length in [1, 128] of the model `bytes`, as
// tests/pipelines/dynamic_build_test.cc builds the BERT example: the module at each length is the
// import bound to it with default_heuristic's graph passes applied.
std::unique_ptr<backends::DynamicExecutable> BuildDynamic(const std::string& bytes) {
  return backends::BuildDynamic(
      kGpt.DynamicSource(bytes, {.symbol = "sequence", .minimum = 1, .bound = 128}));
}

// One build for every length, of the committed model (its fused query/key/value projection cut
// by one Split, as torch.onnx exports GPT-2: a call with three results that change with the
// sequence length) and of the same function with three Slice nodes (QkvCut::kSlices, as exports
// of qkv[..., a:b] indexing have it): the stored inputs run to the stored outputs, other lengths
// to the interpreter on the committed model at that length.
class GptTokensDynamic : public ::testing::TestWithParam<examples::QkvCut> {};

TEST_P(GptTokensDynamic, OneBuildRunsEveryLength) {
  examples::GptTokensConfig config;
  config.qkv_cut = GetParam();
  std::unique_ptr<backends::DynamicExecutable> dynamic =
      BuildDynamic(examples::BuildGptTokensModel(config).SerializeAsString());
  std::string bytes = kGpt.ModelBytes();
  EXPECT_EQ(dynamic->InputSignatures(),
            (std::vector<std::string>{"input_ids: i64[1, sequence]",
                                      "attention_mask: i64[1, sequence]"}));
  EXPECT_EQ(dynamic->OutputSignatures(), (std::vector<std::string>{"f32[1, sequence, 500]"}));
  Model run = [&](const std::vector<ir::Tensor>& inputs) { return dynamic->Run(inputs).at(0); };
  ASSERT_NO_FATAL_FAILURE(kGpt.ExpectStoredOutputs(run, kVocabulary, 1e-4));
  // Other lengths, random ids and masks (the first token valid), against the interpreter on the
  // model at that length; a longer run first leaves its values past the shorter one's end.
  for (int64_t length : {1, 2, 33, 127}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    std::vector<ir::Tensor> inputs =
        testing::RandomTokenInputs(length, 11 + static_cast<uint64_t>(length), 3, kVocabulary);
    ir::Tensor expected = backends::RunReference(kGpt.ImportAt(bytes, length), inputs).at(0);
    EXPECT_LT(ir::RelativeError(dynamic->Run(inputs).at(0), expected), 1e-4);
  }
  ExpectCausal(run);
  ExpectPaddingHidden(run);
}

INSTANTIATE_TEST_SUITE_P(QkvCuts, GptTokensDynamic,
                         ::testing::Values(examples::QkvCut::kSplit, examples::QkvCut::kSlices),
                         [](const ::testing::TestParamInfo<examples::QkvCut>& info) {
                           return info.param == examples::QkvCut::kSplit ? "Split" : "Slices";
                         });

}  // namespace
}  // namespace tandem
