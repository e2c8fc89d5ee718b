// The token-input BERT example (examples/models/bert_tokens/): the committed model is the one
// BuildBertTokensModel writes; its stored outputs at sequence lengths 16, 77 and 128 match both
// an independent computation and the reference interpreter on the model imported at that length
// (its symbolic axes bound with input_shapes); default_heuristic compiles it (the word embedding
// a gather of the run-time input_ids) to the same results; and an input id outside the
// vocabulary is an error naming the index, and the gather's node (interpreter) or the kernel
// holding the gather (compiled executable).
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "examples/models/bert_tokens/bert_tokens_model.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "passes/pass.h"
#include "pipelines/pipeline_registry.h"
#include "tests/pipelines/token_models.h"

namespace tandem {
namespace {

const testing::TokenExample kBert{"bert_tokens"};
const char kWordGather[] = "embeddings_word_embeddings_Gather_output_0";

// Expects `body` to throw an ir::Error naming the bad index, its range and `where` (the gather's
// node for the interpreter; for the executable, the kernel the gather was fused into).
template <typename Body>
void ExpectBadIndexError(Body body, const std::string& where) {
  try {
    body();
    ADD_FAILURE() << "an input id outside the vocabulary ran without an error";
  } catch (const ir::Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("index 1000 "), std::string::npos) << text;
    EXPECT_NE(text.find("[-1000, 1000)"), std::string::npos) << text;
    EXPECT_NE(text.find(where), std::string::npos) << text;
  }
}

TEST(BertTokens, CommittedModelIsTheGeneratedOne) {
  kBert.ExpectCommittedModelIs(examples::BuildBertTokensModel().SerializeAsString(),
                               "BuildBertTokensModel");
}

TEST(BertTokens, StoredOutputsMatchTheIndependentComputationAndTheInterpreter) {
  onnx::ModelProto model = examples::BuildBertTokensModel();
  for (int64_t length : {16, 77, 128}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    std::vector<ir::Tensor> inputs = kBert.Stored(length, "input");
    ASSERT_EQ(inputs.size(), 2u);
    ASSERT_EQ(inputs[0].dtype(), ir::DataType::kInt64);
    ASSERT_EQ(inputs[0].shape(), (ir::Shape{1, length}));
    ir::Tensor stored = kBert.Stored(length, "output").at(0);
    ir::Tensor independent = examples::BertTokensReference(model, inputs[0], inputs[1]);
    EXPECT_LT(ir::RelativeError(stored, independent), 1e-5);
    ir::IRModule module = kBert.ImportAt(length);
    // The word embedding; positions fold at import.
    EXPECT_EQ(testing::CountCalls(module, "gather"), 1);
    EXPECT_LT(ir::RelativeError(backends::RunReference(module, inputs).at(0), stored), 1e-6);
  }
}

TEST(BertTokens, PaddedPositionsDoNotChangeTheOthers) {
  // Tokens behind the mask must not affect the unmasked outputs: the mask works at run time.
  ir::IRModule module = kBert.ImportAt(16);
  std::vector<ir::Tensor> inputs = kBert.Stored(16, "input");
  ir::Tensor changed_ids = inputs[0].Clone();
  changed_ids.data<int64_t>()[15] = (changed_ids.data<int64_t>()[15] + 17) % 1000;  // padding
  ir::Tensor before = backends::RunReference(module, inputs).at(0);
  ir::Tensor after = backends::RunReference(module, {changed_ids, inputs[1]}).at(0);
  for (int64_t i = 0; i < 12 * 64; ++i) {
    ASSERT_NEAR(before.data<float>()[i], after.data<float>()[i], 1e-5) << "element " << i;
  }
  ir::Tensor unmasked = inputs[1].Clone();
  unmasked.data<int64_t>()[15] = 1;
  EXPECT_GT(ir::RelativeError(backends::RunReference(module, {inputs[0], unmasked}).at(0), before),
            1e-3);
}

TEST(BertTokens, DefaultHeuristicMatchesTheInterpreterAtEachLength) {
  for (int64_t length : {16, 77, 128}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    ir::IRModule module = kBert.ImportAt(length);
    std::unique_ptr<backends::Executable> executable = testing::CompileDefaultHeuristic(module);
    std::vector<ir::Tensor> inputs = kBert.Stored(length, "input");
    ir::Tensor compiled = executable->Run(inputs).at(0);
    EXPECT_LT(ir::RelativeError(compiled, backends::RunReference(module, inputs).at(0)), 1e-4);
    EXPECT_LT(ir::RelativeError(compiled, kBert.Stored(length, "output").at(0)), 1e-4);
    // Random ids, negative ones included (they count from the end of the vocabulary).
    ir::Tensor ids = ir::Tensor::Random(inputs[0].type(), 7, -1000, 1000);
    EXPECT_LT(ir::RelativeError(executable->Run({ids, inputs[1]}).at(0),
                                backends::RunReference(module, {ids, inputs[1]}).at(0)),
              1e-4);
  }
}

TEST(BertTokens, InputIdOutsideTheVocabularyNamesTheNodeAndTheIndex) {
  std::vector<ir::Tensor> inputs =
      frontend::ReadTensorProtoDirectory(kBert.Directory() + "/bad_input_id", "input");
  ASSERT_EQ(inputs[0].data<int64_t>()[1], 1000);
  ir::IRModule module = kBert.ImportAt(4);
  ExpectBadIndexError([&] { backends::RunReference(module, inputs); }, kWordGather);
  std::unique_ptr<backends::Executable> executable = testing::CompileDefaultHeuristic(module);
  ExpectBadIndexError([&] { executable->Run(inputs); }, "gather");
  // The executable stays usable after the error.
  std::vector<ir::Tensor> good = {ir::Tensor::FromInt64s({1, 4}, {5, 999, -1000, 3}), inputs[1]};
  EXPECT_LT(
      ir::RelativeError(executable->Run(good).at(0), backends::RunReference(module, good).at(0)),
      1e-4);
}

}  // namespace
}  // namespace tandem
