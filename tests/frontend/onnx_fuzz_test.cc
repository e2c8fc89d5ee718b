// Robustness of the ONNX importer: truncated files, random bytes, byte-level mutations of a
// valid model, and structured mutations (attributes, initializer values, input extents, op types,
// wiring) of a model that exercises most converters and the import-time evaluation. Every case
// must import cleanly or throw ir::Error; anything else (a crash, another exception) fails.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "frontend/onnx_importer.h"
#include "ir/error.h"
#include "tests/frontend/onnx_test_util.h"

namespace tandem::frontend {
namespace {

using ir::DataType;
using ir::Tensor;
using testing::FloatAttr;
using testing::IntAttr;
using testing::IntsAttr;
using testing::OnnxModel;
namespace fs = std::filesystem;

Tensor RandomF32(const ir::Shape& shape, uint64_t seed) {
  return Tensor::Random(ir::TensorType{shape, DataType::kFloat32, ""}, seed);
}

Tensor Ints(const std::vector<int64_t>& values) {
  return Tensor::FromInt64s({static_cast<int64_t>(values.size())}, values);
}

// A small model using many converters, including a constant subgraph and a shape computation
// that are evaluated at import time.
OnnxModel KitchenSinkModel() {
  OnnxModel model;
  model.Input("x", {1, 2, 6, 6});
  model.Initializer("w", RandomF32({4, 2, 3, 3}, 1)).Initializer("b", RandomF32({4}, 2));
  model.Initializer("sizes", Ints({1, 3})).Initializer("pads", Ints({0, 0, 1, 1, 0, 0, 0, 0}));
  model.Initializer("starts", Ints({0})).Initializer("ends", Ints({3}));
  model.Initializer("axes", Ints({2})).Initializer("steps", Ints({1}));
  model.Initializer("zero", Tensor::FromInt64s({}, {0})).Initializer("minus_one", Ints({-1}));
  model.Initializer("unsqueeze_axes", Ints({0})).Initializer("fc_t", RandomF32({5, 12}, 3));
  model.Initializer("fc_b", RandomF32({5}, 4)).Initializer("lo", Tensor::FromFloats({}, {-0.5f}));
  model.Initializer("hi", Tensor::FromFloats({}, {0.5f})).Initializer("reduce_axes", Ints({3}));
  for (const char* name : {"g", "beta", "mean"}) model.Initializer(name, RandomF32({4}, 5));
  model.Initializer("var", Tensor::FromFloats({4}, {1, 2, 0.5f, 1.5f}));
  model.Node("Conv", {"x", "w", "b"}, {"c"},
             {IntsAttr("pads", {1, 1, 1, 1}), IntsAttr("strides", {1, 1}),
              IntsAttr("kernel_shape", {3, 3})},
             "conv");
  model.Node("BatchNormalization", {"c", "g", "beta", "mean", "var"}, {"bn"},
             {FloatAttr("epsilon", 1e-5f)}, "bn");
  model.Node("Relu", {"bn"}, {"r"}, {}, "relu");
  model.Node("MaxPool", {"r"}, {"p"},
             {IntsAttr("kernel_shape", {2, 2}), IntsAttr("strides", {2, 2})}, "pool");
  model.Node("Split", {"p", "sizes"}, {"s0", "s1"}, {IntAttr("axis", 1)}, "split");
  model.Node("Concat", {"s1", "s0"}, {"cc"}, {IntAttr("axis", 1)}, "concat");
  model.Node("Pad", {"cc", "pads"}, {"pd"}, {testing::StringAttr("mode", "constant")}, "pad");
  model.Node("Slice", {"pd", "starts", "ends", "axes", "steps"}, {"sl"}, {}, "slice");
  model.Node("Transpose", {"sl"}, {"t"}, {IntsAttr("perm", {0, 2, 1, 3})}, "transpose");
  model.Node("ReduceMean", {"t", "reduce_axes"}, {"rm"}, {IntAttr("keepdims", 1)}, "reduce");
  model.Node("Shape", {"t"}, {"shape"}, {}, "shape");
  model.Node("Gather", {"shape", "zero"}, {"batch"}, {IntAttr("axis", 0)}, "gather");
  model.Node("Unsqueeze", {"batch", "unsqueeze_axes"}, {"batch1"}, {}, "unsqueeze");
  model.Node("Concat", {"batch1", "minus_one"}, {"target"}, {IntAttr("axis", 0)}, "concat_shape");
  model.Node("Reshape", {"rm", "target"}, {"f"}, {}, "reshape");
  model.Node("Transpose", {"fc_t"}, {"fc"}, {IntsAttr("perm", {1, 0})}, "fold_transpose");
  model.Node("Gemm", {"f", "fc", "fc_b"}, {"y"},
             {FloatAttr("alpha", 0.5f), FloatAttr("beta", 2.0f), IntAttr("transB", 0)}, "gemm");
  model.Node("Clip", {"y", "lo", "hi"}, {"cl"}, {}, "clip");
  model.Node("Softmax", {"cl"}, {"out"}, {IntAttr("axis", 1)}, "softmax");
  model.Output("out").Output("s0");
  return model;
}

TEST(OnnxFuzz, KitchenSinkModelImportsAndRuns) {
  ir::IRModule module = KitchenSinkModel().Import();
  std::vector<Tensor> outputs =
      backends::RunReference(module, backends::RandomInputs(module.Get("main"), 1));
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].shape(), (ir::Shape{1, 5}));
  double total = 0;
  for (double v : outputs[0].ToDoubles()) total += v;
  EXPECT_NEAR(total, 1.0, 1e-6);                        // softmax rows sum to one
  EXPECT_EQ(testing::CountOp(module, "transpose"), 1);  // the weight's transpose was folded
}

// Accepts a clean import or an Error; any other exception fails the test.
void ImportOrError(const std::string& bytes, const std::string& what, int* imported = nullptr) {
  try {
    ir::IRModule module = ImportOnnxModel(bytes, "fuzz");
    ir::Verify(module);
    if (imported) ++*imported;
  } catch (const ir::Error& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": a non-Error exception: " << e.what();
  }
}

TEST(OnnxFuzz, TruncatedModelsAreErrors) {
  std::string bytes = KitchenSinkModel().Serialize();
  ASSERT_NO_THROW(ImportOnnxModel(bytes, "small"));
  for (size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_THROW(ImportOnnxModel(bytes.substr(0, size), "small"), ir::Error) << "prefix " << size;
  }
  fs::path resnet = fs::path(TANDEM_MODELS_DIR) / "resnet18" / "model.onnx";
  if (!fs::exists(resnet)) GTEST_SKIP() << "shared model " << resnet << " is not available";
  std::ifstream in(resnet, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t k = 0; k < 16; ++k) {
    testing::ExpectError(
        [&] { ImportOnnxModel(file.substr(0, file.size() * k / 16), "resnet18.onnx"); },
        {"resnet18.onnx"});
  }
}

TEST(OnnxFuzz, RandomBytesAndFlippedBitsNeverCrash) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string junk(rng() % 200 + 1, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    ImportOrError(junk, "random bytes");
  }
  std::string bytes = KitchenSinkModel().Serialize();
  int imported = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string mutated = bytes;
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      size_t at = rng() % mutated.size();
      mutated[at] = rng() % 4 == 0 ? static_cast<char>(rng())
                                   : static_cast<char>(mutated[at] ^ (1 << (rng() % 8)));
    }
    ImportOrError(mutated, "mutated bytes (trial " + std::to_string(trial) + ")", &imported);
  }
  std::cout << "[ info ] " << imported << " of 2000 byte-mutated models still imported\n";
}

// One structural change to a model: an attribute value, an initializer element, an input extent,
// an op type or an input name.
void MutateStructure(onnx::ModelProto& model, std::mt19937_64& rng) {
  static const int64_t kValues[] = {
      std::numeric_limits<int64_t>::min(), -7, -2, -1, 0, 1, 2, 3, 5, int64_t{1} << 40,
      std::numeric_limits<int64_t>::max()};
  static const char* kOps[] = {"Conv",    "Relu",      "Split",      "Slice",
                               "Reshape", "Gemm",      "Concat",     "Pad",
                               "Gather",  "Softmax",   "Transpose",  "Clip",
                               "MaxPool", "Unsqueeze", "ReduceMean", "BatchNormalization",
                               "Range",   "Where"};
  auto value = [&] { return kValues[rng() % std::size(kValues)]; };
  onnx::GraphProto* graph = model.mutable_graph();
  onnx::NodeProto* node = graph->mutable_node(static_cast<int>(rng() % graph->node_size()));
  switch (rng() % 6) {
    case 0: {  // an attribute value
      if (node->attribute_size() == 0) return;
      onnx::AttributeProto* a =
          node->mutable_attribute(static_cast<int>(rng() % node->attribute_size()));
      if (a->ints_size() > 0) {
        if (rng() % 4 == 0) {
          a->add_ints(value());
        } else {
          a->set_ints(static_cast<int>(rng() % a->ints_size()), value());
        }
      } else if (a->has_i()) {
        a->set_i(value());
      } else if (a->has_f()) {
        a->set_f(static_cast<float>(value()));
      } else if (a->has_s()) {
        a->set_s(rng() % 2 ? "SAME_UPPER" : "bogus");
      }
      break;
    }
    case 1: {  // an element of an int64 initializer (shapes, axes, sizes, pads)
      onnx::TensorProto* t =
          graph->mutable_initializer(static_cast<int>(rng() % graph->initializer_size()));
      if (t->data_type() != onnx::TensorProto::INT64 || t->raw_data().empty()) return;
      std::string raw = t->raw_data();
      int64_t v = value();
      size_t at = (rng() % (raw.size() / 8)) * 8;
      std::memcpy(raw.data() + at, &v, 8);
      t->set_raw_data(raw);
      break;
    }
    case 2: {  // an input extent
      auto* dims = graph->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
      dims->mutable_dim(static_cast<int>(rng() % dims->dim_size()))
          ->set_dim_value(static_cast<int64_t>(rng() % 9));
      break;
    }
    case 3:  // another op type with the same operands
      node->set_op_type(kOps[rng() % std::size(kOps)]);
      break;
    case 4:  // an operand replaced by another node's input or dropped
      if (node->input_size() == 0) return;
      if (rng() % 2) {
        const onnx::NodeProto& other = graph->node(static_cast<int>(rng() % graph->node_size()));
        if (other.input_size() > 0) {
          node->set_input(static_cast<int>(rng() % node->input_size()), other.input(0));
        }
      } else {
        node->mutable_input()->RemoveLast();
      }
      break;
    default:  // an optional operand left empty
      if (node->input_size() > 1) node->set_input(static_cast<int>(rng() % node->input_size()), "");
      break;
  }
}

TEST(OnnxFuzz, StructuralMutationsNeverCrash) {
  const onnx::ModelProto original = KitchenSinkModel().proto();
  std::mt19937_64 rng(7);
  int imported = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    onnx::ModelProto model = original;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits)
      MutateStructure(model, rng);
    ImportOrError(model.SerializeAsString(),
                  "structural mutation (trial " + std::to_string(trial) + ")", &imported);
  }
  std::cout << "[ info ] " << imported << " of 3000 structurally mutated models still imported\n";
}

}  // namespace
}  // namespace tandem::frontend
