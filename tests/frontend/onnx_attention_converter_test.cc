// Tests of the converter of com.microsoft Attention (onnx_attention_converter.cc): models with
// and without the 2-D mask, causal and not, imported, run on the reference interpreter and
// compared with ONNX Runtime's formula evaluated here in plain loops; and the import errors for
// the forms not supported.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Tensor;
using testing::CountOp;
using testing::ExpectError;
using testing::ExpectNear;
using testing::FloatAttr;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OnnxModel;

constexpr int64_t kBatch = 2, kSeq = 3, kHidden = 4, kHeads = 2;

Tensor RandomF32(const ir::Shape& shape, uint64_t seed) {
  return Tensor::Random(ir::TensorType{shape, DataType::kFloat32, ""}, seed);
}

// An Attention model over input [2, 3, 4] with 2 heads; `mask` adds the input mask_index.
OnnxModel AttentionModel(const std::vector<onnx::AttributeProto>& attrs, bool mask,
                         const ir::Shape& mask_shape = {kBatch, kSeq}) {
  OnnxModel model;
  auto* entry = model.proto().add_opset_import();
  entry->set_domain("com.microsoft");
  entry->set_version(1);
  model.Input("x", {kBatch, kSeq, kHidden});
  model.Initializer("w", RandomF32({kHidden, 3 * kHidden}, 11));
  model.Initializer("b", RandomF32({3 * kHidden}, 12));
  std::vector<std::string> inputs = {"x", "w", "b"};
  if (mask) {
    model.Input("mask", mask_shape, DataType::kInt32);
    inputs.push_back("mask");
  }
  model.Node("Attention", inputs, {"y"}, attrs, "attention").Output("y");
  model.graph()->mutable_node(0)->set_domain("com.microsoft");
  return model;
}

// ONNX Runtime's Attention in double: scores + filter where the mask is 0 + filter for a later
// key when causal, softmax, times V.
std::vector<double> Expected(const Tensor& x, const std::vector<int>& mask, bool causal,
                             double filter) {
  Tensor w = RandomF32({kHidden, 3 * kHidden}, 11), b = RandomF32({3 * kHidden}, 12);
  const int64_t d = kHidden / kHeads;
  std::vector<double> qkv(static_cast<size_t>(kBatch * kSeq * 3 * kHidden));
  for (int64_t t = 0; t < kBatch * kSeq; ++t) {
    for (int64_t j = 0; j < 3 * kHidden; ++j) {
      double sum = b.GetDouble(j);
      for (int64_t i = 0; i < kHidden; ++i) {
        sum += x.GetDouble(t * kHidden + i) * w.GetDouble(i * 3 * kHidden + j);
      }
      qkv[static_cast<size_t>(t * 3 * kHidden + j)] = sum;
    }
  }
  auto at = [&](int64_t batch, int64_t s, int64_t part, int64_t head, int64_t e) {
    return qkv[static_cast<size_t>((batch * kSeq + s) * 3 * kHidden + part * kHidden + head * d +
                                   e)];
  };
  std::vector<double> out(static_cast<size_t>(kBatch * kSeq * kHidden));
  for (int64_t batch = 0; batch < kBatch; ++batch) {
    for (int64_t head = 0; head < kHeads; ++head) {
      for (int64_t q = 0; q < kSeq; ++q) {
        std::vector<double> scores(kSeq);
        double top = -1e300, total = 0;
        for (int64_t k = 0; k < kSeq; ++k) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += at(batch, q, 0, head, e) * at(batch, k, 1, head, e);
          double s = dot / std::sqrt(static_cast<double>(d));
          if (!mask.empty() && mask[static_cast<size_t>(batch * kSeq + k)] == 0) s += filter;
          if (causal && k > q) s += filter;
          scores[static_cast<size_t>(k)] = s;
          top = std::max(top, s);
        }
        for (double& s : scores) total += (s = std::exp(s - top));
        for (int64_t e = 0; e < d; ++e) {
          double sum = 0;
          for (int64_t k = 0; k < kSeq; ++k) {
            sum += scores[static_cast<size_t>(k)] / total * at(batch, k, 2, head, e);
          }
          out[static_cast<size_t>((batch * kSeq + q) * kHidden + head * d + e)] = sum;
        }
      }
    }
  }
  return out;
}

TEST(OnnxAttentionConvert, DecomposesIntoGraphOps) {
  ir::IRModule module = AttentionModel({IntAttr("num_heads", kHeads)}, false).Import();
  EXPECT_EQ(CountOp(module, "batch_matmul"), 2);
  EXPECT_EQ(CountOp(module, "softmax"), 1);
  Tensor x = RandomF32({kBatch, kSeq, kHidden}, 3);
  ExpectNear(backends::RunReference(module, {x}).at(0), {kBatch, kSeq, kHidden},
             Expected(x, {}, false, -10000), 1e-5);
}

TEST(OnnxAttentionConvert, MaskAndCausal) {
  Tensor x = RandomF32({kBatch, kSeq, kHidden}, 4);
  std::vector<int> mask = {1, 1, 0, 1, 0, 1};
  Tensor mask_tensor({kBatch, kSeq}, DataType::kInt32);
  for (size_t i = 0; i < mask.size(); ++i) mask_tensor.data<int32_t>()[i] = mask[i];
  for (int64_t causal : {0, 1}) {
    SCOPED_TRACE(causal);
    OnnxModel model =
        AttentionModel({IntAttr("num_heads", kHeads), IntAttr("unidirectional", causal)}, true);
    std::vector<double> expected = Expected(x, mask, causal == 1, -10000);
    ExpectNear(testing::ImportAndRun(model, {x, mask_tensor}).at(0), {kBatch, kSeq, kHidden},
               expected, 1e-5);
  }
  // A different mask_filter_value changes the result only through the masked keys' weight.
  OnnxModel soft =
      AttentionModel({IntAttr("num_heads", kHeads), FloatAttr("mask_filter_value", -1)}, true);
  ExpectNear(testing::ImportAndRun(soft, {x, mask_tensor}).at(0), {kBatch, kSeq, kHidden},
             Expected(x, mask, false, -1), 1e-5);
}

TEST(OnnxAttentionConvert, UnsupportedFormsNameWhatIsUnsupported) {
  ExpectError([] { AttentionModel({}, false).Import(); }, {"attention", "'num_heads'"});
  ExpectError([] { AttentionModel({IntAttr("num_heads", 3)}, false).Import(); },
              {"num_heads 3 must divide the hidden size 4"});
  ExpectError(
      [] {
        AttentionModel({IntAttr("num_heads", 2), IntsAttr("qkv_hidden_sizes", {4, 4, 4})}, false)
            .Import();
      },
      {"attention", "'qkv_hidden_sizes' is not supported"});
  ExpectError([] { AttentionModel({IntAttr("num_heads", 2)}, true, {kBatch}).Import(); },
              {"attention", "mask_index i32[2] is not supported", "2-D"});
  ExpectError(
      [] {
        AttentionModel({IntAttr("num_heads", 2), IntAttr("unidirectional", 2)}, false).Import();
      },
      {"unidirectional must be 0 or 1"});
  OnnxModel past = AttentionModel({IntAttr("num_heads", 2)}, true);
  past.Input("past", {2, kBatch, kHeads, 1, kHidden / kHeads});
  past.graph()->mutable_node(0)->add_input("past");
  ExpectError([&] { past.Import(); }, {"attention", "input 4 ('past') is not supported"});
  OnnxModel present = AttentionModel({IntAttr("num_heads", 2)}, false);
  present.graph()->mutable_node(0)->add_output("present");
  ExpectError([&] { present.Import(); }, {"attention", "present", "not supported"});
}

}  // namespace
}  // namespace tandem::frontend
