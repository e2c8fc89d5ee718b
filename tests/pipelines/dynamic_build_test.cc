// A dynamic build of the token-input BERT example (examples/models/bert_tokens/): one build for
// every sequence length in [1, 128] (the graph part of default_heuristic, then dynamic lowering)
// runs at 16, 77 and 128 to the stored outputs, and at other lengths to the reference
// interpreter on the model imported at that length; the pipeline must end with Legalize.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backends/reference/interpreter.h"
#include "backends/runtime/dynamic_executable.h"
#include "frontend/onnx_importer.h"
#include "frontend/onnx_tensor.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/kernel/functor.h"
#include "kernels/search/search_space.h"
#include "passes/pass.h"
#include "passes/pipeline_text.h"
#include "pipelines/pipeline_registry.h"
#include "tests/pipelines/dynamic_graphs.h"
#include "tests/pipelines/token_models.h"

namespace tandem {
namespace {

const testing::TokenExample kBert{"bert_tokens"};

std::unique_ptr<backends::DynamicExecutable> BuildBertTokens(int64_t minimum, int64_t bound) {
  return backends::BuildDynamic(kBert.DynamicSource(
      kBert.ModelBytes(), {.symbol = "seq", .minimum = minimum, .bound = bound}));
}

TEST(DynamicBuild, OneBertBuildRunsEveryLengthToTheStoredOutputs) {
  std::unique_ptr<backends::DynamicExecutable> dynamic = BuildBertTokens(1, 128);
  EXPECT_EQ(dynamic->InputSignatures(),
            (std::vector<std::string>{"input_ids: i64[1, seq]", "attention_mask: i64[1, seq]"}));
  EXPECT_EQ(dynamic->OutputSignatures(), (std::vector<std::string>{"f32[1, seq, 64]"}));
  ASSERT_NO_FATAL_FAILURE(kBert.ExpectStoredOutputs(
      [&](const std::vector<ir::Tensor>& inputs) { return dynamic->Run(inputs).at(0); }, 64, 1e-4));
  // Other lengths, random ids and masks, against the interpreter on the model at that length;
  // a longer run first leaves its values past the shorter one's end in the arena.
  std::string bytes = kBert.ModelBytes();
  for (int64_t length : {1, 2, 33, 127, 5}) {
    SCOPED_TRACE("sequence length " + std::to_string(length));
    std::vector<ir::Tensor> inputs =
        testing::RandomTokenInputs(length, 11 + static_cast<uint64_t>(length), 3, 1000);
    ir::Tensor expected = backends::RunReference(kBert.ImportAt(bytes, length), inputs).at(0);
    EXPECT_LT(ir::RelativeError(dynamic->Run(inputs).at(0), expected), 1e-4);
  }
}

TEST(DynamicBuild, InputsOutsideTheRangeOrDisagreeingAreErrors) {
  std::unique_ptr<backends::DynamicExecutable> dynamic = BuildBertTokens(4, 32);
  auto ids = [](int64_t length) {
    return ir::Tensor(ir::TensorType{{1, length}, ir::DataType::kInt64, ""});
  };
  auto expect_error = [&](const std::vector<ir::Tensor>& inputs, const std::string& part) {
    try {
      dynamic->Run(inputs);
      ADD_FAILURE() << "no error for " << part;
    } catch (const ir::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error({ids(33), ids(33)},
               "input 'input_ids' is i64[1,33] but the model takes "
               "i64[1, seq] with seq in [4, 32]");
  expect_error({ids(3), ids(3)}, "seq in [4, 32]");
  expect_error({ids(8), ids(9)},
               "input 'attention_mask' gives seq=9 but input 'input_ids' "
               "gives seq=8");
  expect_error({ids(8)}, "the model takes 2 inputs but 1 were given");
  EXPECT_EQ(dynamic->SizesOf({ids(4), ids(4)}), std::vector<int64_t>{4});
}

// Self-attention over n tokens of width 16 with a position table sliced to n, a residual and a
// layer norm: reductions over the dynamic axis (the scores' softmax and the context matmul) and
// over a static one (the norm), a constant that changes with n.
ir::IRModule Attention(int64_t n) {
  ir::GraphBuilder b("main");
  ir::TensorType x_type{{n, 16}, ir::DataType::kFloat32, ""};
  ir::ValueId x = b.Input("x", x_type);
  ir::Tensor table = ir::Tensor::Random(ir::TensorType{{64, 16}, ir::DataType::kFloat32, ""}, 5);
  std::vector<float> rows(table.data<float>(), table.data<float>() + n * 16);
  ir::ValueId positions = b.Constant(ir::Tensor::FromFloats({n, 16}, rows), "positions");
  ir::ValueId h = b.Call("add", {x, positions});
  auto weight = [&](uint64_t seed) {
    return b.Constant(
        ir::Tensor::Random(ir::TensorType{{16, 16}, ir::DataType::kFloat32, ""}, seed, -0.3, 0.3));
  };
  ir::ValueId q = b.Call("matmul", {h, weight(1)});
  ir::ValueId k = b.Call("matmul", {h, weight(2)});
  ir::ValueId v = b.Call("matmul", {h, weight(3)});
  ir::ValueId kt = b.Call("transpose", {k}, ir::Attrs{{"axes", std::vector<int64_t>{1, 0}}});
  ir::ValueId scores = b.Call("matmul", {q, kt});
  ir::ValueId probabilities = b.Call("softmax", {scores}, ir::Attrs{{"axis", int64_t{-1}}});
  ir::ValueId context = b.Call("matmul", {probabilities, v});
  ir::ValueId residual = b.Call("add", {context, h});
  ir::ValueId gamma =
      b.Constant(ir::Tensor::Random(ir::TensorType{{16}, ir::DataType::kFloat32, ""}, 8, 0.5, 1.5));
  ir::ValueId beta =
      b.Constant(ir::Tensor::Random(ir::TensorType{{16}, ir::DataType::kFloat32, ""}, 9));
  ir::ValueId normed = b.Call("layer_norm", {residual, gamma, beta},
                              ir::Attrs{{"axis", int64_t{1}}, {"epsilon", 1e-5}});
  ir::IRModule module;
  module.Add(b.Finish(b.Call("relu", {normed})));
  return module;
}

TEST(DynamicBuild, AttentionMatchesTheInterpreterAtEverySize) {
  for (const std::string& pipeline : {std::string(), testing::HeuristicGraphPasses()}) {
    SCOPED_TRACE("pipeline '" + pipeline + "'");
    std::unique_ptr<backends::DynamicExecutable> dynamic =
        testing::BuildGraph(Attention, 1, 64, pipeline);
    for (int64_t n : {64, 1, 7, 16, 33, 63}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      ir::Tensor x = ir::Tensor::Random(ir::TensorType{{n, 16}, ir::DataType::kFloat32, ""},
                                        static_cast<uint64_t>(n));
      ir::Tensor expected = backends::RunReference(Attention(n), {x}).at(0);
      EXPECT_LT(ir::RelativeError(dynamic->Run({x}).at(0), expected), 1e-4);
    }
  }
}

// Windows padded past the end of the dynamic axis: a 'same' convolution (padding 1 each side)
// fused with its bias and activation, a max pool padded by 1, a 5-tap convolution padded 2 and
// 1 (n - 1 outputs), and a constant pad; at every size the padding past the valid part reads
// as padding, as the model at that size pads.
ir::IRModule PaddedWindows(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 8, n}, ir::DataType::kFloat32, ""});
  auto weight = [&](int64_t taps, uint64_t seed) {
    return b.Constant(
        ir::Tensor::Random(ir::TensorType{{8, 8, taps}, ir::DataType::kFloat32, ""}, seed));
  };
  ir::ValueId bias =
      b.Constant(ir::Tensor::Random(ir::TensorType{{1, 8, 1}, ir::DataType::kFloat32, ""}, 3));
  ir::ValueId same =
      b.Call("relu", {b.Call("add", {b.Call("conv1d", {b.Call("tanh", {x}), weight(3, 1)},
                                            ir::Attrs{{"padding", std::vector<int64_t>{1, 1}}}),
                                     bias})});
  ir::ValueId pooled = b.Call(
      "reshape",
      {b.Call(
          "max_pool2d",
          {b.Call("reshape", {same}, ir::Attrs{{"newshape", std::vector<int64_t>{1, 8, -1, 1}}})},
          ir::Attrs{{"pool_size", std::vector<int64_t>{3, 1}},
                    {"padding", std::vector<int64_t>{1, 0, 1, 0}}})},
      ir::Attrs{{"newshape", std::vector<int64_t>{1, 8, -1}}});
  ir::ValueId shorter = b.Call("conv1d", {pooled, weight(5, 2)},
                               ir::Attrs{{"padding", std::vector<int64_t>{2, 1}}});  // n - 1
  ir::ValueId padded = b.Call("pad", {shorter},
                              ir::Attrs{{"pad_width", std::vector<int64_t>{0, 0, 1, 0, 0, 2}},
                                        {"pad_value", 0.5}});  // n + 2
  ir::IRModule module;
  module.Add(b.Finish(padded));
  return module;
}

ir::IRModule Means(int64_t n);

// Tuned schedules: every kernel gets a program sampled from the CPU design space, as a tuning
// database would serve; the guards go on whatever the schedule made, at every size. A mean over
// the dynamic axis reaches the provider as the mean at the bound (its "mean_sum" block), the
// kernel that tuning at the bound records.
TEST(DynamicBuild, KernelsWithSampledSchedulesMatchTheInterpreter) {
  // Attention over [n, 16], padded windows over [1, 8, n], and means over [n, 3, 8].
  struct Model {
    testing::MakeGraph make;
    bool means = false;
  };
  std::vector<Model> models = {{Attention}, {PaddedWindows}, {Means, true}};
  for (uint64_t seed : {1, 2, 3}) {
    for (size_t m = 0; m < models.size(); ++m) {
      SCOPED_TRACE(fmt::format("seed {}, model {}", seed, m));
      testing::SampledKernels counts;
      std::unique_ptr<backends::DynamicExecutable> dynamic =
          testing::BuildGraph(models[m].make, 2, 48, testing::HeuristicGraphPasses(),
                              testing::SampledScheduleOptions(seed, counts));
      EXPECT_GT(counts.sampled, 1);
      if (models[m].means) {
        EXPECT_GE(counts.means, 4);
      }
      for (int64_t n : {48, 2, 6, 17, 40}) {
        testing::ExpectMatchesAt(*dynamic, models[m].make, n, static_cast<uint64_t>(n) + seed,
                                 1e-4);
      }
    }
  }
}

// Self-attention whose query, key and value come from one projection cut by a split (as GPT-2's
// fused attention projection is exported): a call with several results, each a dynamic value.
ir::IRModule SplitAttention(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{n, 16}, ir::DataType::kFloat32, ""});
  ir::ValueId weight = b.Constant(
      ir::Tensor::Random(ir::TensorType{{16, 48}, ir::DataType::kFloat32, ""}, 4, -0.3, 0.3));
  ir::ValueId projected = b.Call("matmul", {x, weight});
  ir::ValueId parts =
      b.Call("split", {projected},
             ir::Attrs{{"axis", int64_t{1}}, {"sections", std::vector<int64_t>{16, 16, 16}}});
  ir::ValueId q = b.TupleGetItem(parts, 0);
  ir::ValueId kt = b.Call("transpose", {b.TupleGetItem(parts, 1)},
                          ir::Attrs{{"axes", std::vector<int64_t>{1, 0}}});
  ir::ValueId scores = b.Call("matmul", {q, kt});
  ir::ValueId probabilities = b.Call("softmax", {scores}, ir::Attrs{{"axis", int64_t{-1}}});
  ir::IRModule module;
  module.Add(b.Finish(b.Call("matmul", {probabilities, b.TupleGetItem(parts, 2)})));
  return module;
}

TEST(DynamicBuild, SplitResultsAreDynamicValues) {
  for (const std::string& pipeline : {std::string(), testing::HeuristicGraphPasses()}) {
    SCOPED_TRACE("pipeline '" + pipeline + "'");
    std::unique_ptr<backends::DynamicExecutable> dynamic =
        testing::BuildGraph(SplitAttention, 1, 40, pipeline);
    for (int64_t n : {40, 1, 9, 39}) {
      SCOPED_TRACE("n = " + std::to_string(n));
      ir::Tensor x = ir::Tensor::Random(ir::TensorType{{n, 16}, ir::DataType::kFloat32, ""},
                                        static_cast<uint64_t>(n));
      ir::Tensor expected = backends::RunReference(SplitAttention(n), {x}).at(0);
      EXPECT_LT(ir::RelativeError(dynamic->Run({x}).at(0), expected), 1e-4);
    }
  }
}

ir::IRModule OneOp(int64_t n, const std::string& op, const ir::Attrs& attrs, ir::Shape shape,
                   int copies = 1) {
  ir::GraphBuilder b("main");
  for (int64_t& extent : shape) extent = extent < 0 ? n : extent;
  ir::ValueId x = b.Input("x", ir::TensorType{shape, ir::DataType::kFloat32, ""});
  std::vector<ir::ValueId> operands(static_cast<size_t>(copies), x);
  ir::IRModule module;
  module.Add(b.Finish(b.Call(op, operands, attrs)));
  return module;
}

// Means over the dynamic axis of [n, 3, 8] values: over the rows alone (kept or dropped), over
// rows and a static axis, over everything (a scalar), and fused with the ops around them (a
// variance: the mean subtracted, squared, averaged); each divides by the valid count at run time.
ir::IRModule Means(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{n, 3, 8}, ir::DataType::kFloat32, ""});
  ir::ValueId y = b.Call("tanh", {x});
  auto mean = [&](ir::ValueId v, std::vector<int64_t> axes, int64_t keepdims) {
    return b.Call("mean", {v}, ir::Attrs{{"axes", axes}, {"keepdims", keepdims}});
  };
  ir::ValueId over_rows = mean(y, {0}, 1);                        // [1, 3, 8]
  ir::ValueId dropped = mean(y, {-3}, 0);                         // [3, 8]
  ir::ValueId two = mean(b.Call("multiply", {y, y}), {0, 2}, 1);  // [1, 3, 1]
  ir::ValueId all = mean(x, {}, 0);                               // []
  ir::ValueId centered = b.Call("subtract", {y, over_rows});      // [n, 3, 8]
  ir::ValueId spread = mean(b.Call("multiply", {centered, centered}), {0}, 0);
  ir::ValueId sum =
      b.Call("add", {b.Call("add", {dropped, spread}), b.Call("sqrt", {b.Call("abs", {two})})});
  ir::ValueId out = b.Call("add", {sum, all});
  ir::IRModule module;
  module.Add(b.Finish(b.Tuple({out, centered})));
  return module;
}

// A dense layer over [n, 256] rows built for n up to 256: its guarded parallel loop runs on
// threads where the rows are many (256, 255: 16384 results or more) and on the calling thread
// alone where they are few (1, 2: below 16384 results and 2^20 multiply-adds); both match.
ir::IRModule DenseRows(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{n, 256}, ir::DataType::kFloat32, ""});
  ir::ValueId weight = b.Constant(
      ir::Tensor::Random(ir::TensorType{{256, 256}, ir::DataType::kFloat32, ""}, 9, -0.1, 0.1));
  ir::IRModule module;
  module.Add(b.Finish(b.Call("relu", {b.Call("matmul", {x, weight})})));
  return module;
}

TEST(DynamicBuild, GuardedParallelLoopsMatchOnThreadsAndOnOneThread) {
  testing::ExpectEverySizeMatches(DenseRows, 1, 256);
}

TEST(DynamicBuild, MeansOverTheDynamicAxisDivideByTheValidLength) {
  testing::ExpectEverySizeMatches(Means, 1);
}

// Rotary position tables sliced to the first n positions, as exported decoders hold them:
// x * cos + tanh(x) * sin. At n = 1 the cos table is all ones, so the graph passes drop its
// multiply and the graph made at 1 has a node fewer than at the bounds; the build compares the
// graphs at 2 instead and runs size 1 as the bound graph restricted to it.
ir::IRModule RotaryTables(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{n, 4}, ir::DataType::kFloat32, ""});
  ir::Tensor cos(ir::TensorType{{n, 4}, ir::DataType::kFloat32, ""});
  ir::Tensor sin(cos.type());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      double angle = static_cast<double>(i) / static_cast<double>(1 + 3 * j);
      cos.data<float>()[i * 4 + j] = static_cast<float>(std::cos(angle));
      sin.data<float>()[i * 4 + j] = static_cast<float>(std::sin(angle));
    }
  }
  ir::ValueId turned = b.Call("multiply", {b.Call("tanh", {x}), b.Constant(sin, "sin")});
  ir::IRModule module;
  module.Add(b.Finish(b.Call("add", {b.Call("multiply", {x, b.Constant(cos, "cos")}), turned})));
  return module;
}

TEST(DynamicBuild, GraphsThatFoldFurtherAtSizeOneBuildOnce) {
  passes::PassContext context;
  ir::IRModule at_one =
      context.RunPipeline(*passes::ParsePipeline(testing::HeuristicGraphPasses()), RotaryTables(1));
  ir::IRModule at_two =
      context.RunPipeline(*passes::ParsePipeline(testing::HeuristicGraphPasses()), RotaryTables(2));
  ASSERT_LT(at_one.Get("main").nodes.size(), at_two.Get("main").nodes.size());
  testing::ExpectEverySizeMatches(RotaryTables, 1);
}

// A concatenation whose dynamic part comes last ([2, 4] then [n, 4]: a class token before the
// sequence) and a convolution along the dynamic axis without padding past its end (its windows
// stay inside the valid part: n - 2 outputs) need no run-time offsets.
ir::IRModule PrefixAndWindow(int64_t n) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 8, n}, ir::DataType::kFloat32, ""});
  ir::ValueId prefix = b.Constant(
      ir::Tensor::Random(ir::TensorType{{1, 8, 2}, ir::DataType::kFloat32, ""}, 9), "prefix");
  ir::ValueId weight = b.Constant(
      ir::Tensor::Random(ir::TensorType{{8, 8, 3}, ir::DataType::kFloat32, ""}, 10), "weight");
  ir::ValueId joined =
      b.Call("concat", {prefix, b.Call("tanh", {x})}, ir::Attrs{{"axis", int64_t{2}}});  // n+2
  ir::IRModule module;
  module.Add(b.Finish(b.Call("conv1d", {joined, weight})));  // [1, 8, n]
  return module;
}

TEST(DynamicBuild, PrefixesAndWindowsInsideTheValidPartMatchTheInterpreter) {
  testing::ExpectEverySizeMatches(PrefixAndWindow, 2);
}

TEST(DynamicBuild, PaddedWindowsReadPaddingPastTheValidPart) {
  testing::ExpectEverySizeMatches(PaddedWindows, 2);
}

TEST(DynamicBuild, WhatDependsOnTheLengthOrPositionsPastItIsAnError) {
  // A layer norm over the dynamic axis divides by its length inside the op.
  testing::ExpectBuildError(
      [](int64_t n) {
        return OneOp(n, "layer_norm", {{"axis", int64_t{0}}, {"epsilon", 1e-5}}, {-1, 4}, 3);
      },
      "cannot lower 'layer_norm' over the dynamic axis 'n'");
  // An average pool padded along the dynamic axis divides by the taps inside the input at the
  // bound.
  testing::ExpectBuildError(
      [](int64_t n) {
        return OneOp(n, "avg_pool2d",
                     {{"pool_size", std::vector<int64_t>{3, 1}},
                      {"padding", std::vector<int64_t>{1, 0, 1, 0}}},
                     {1, 2, -1, 4});
      },
      "reads axis 2 (valid length n)");
  // A strided window's length joined to itself: 2 * floor((n + 3) / 2) is neither affine in n
  // nor a window of an operand's length (tests/pipelines/dynamic_strided_windows_test.cc builds
  // the strided window alone).
  testing::ExpectBuildError(
      [](int64_t n) {
        ir::GraphBuilder b("main");
        ir::ValueId x = b.Input("x", ir::TensorType{{1, 8, n + 4}, ir::DataType::kFloat32, ""});
        ir::ValueId w = b.Constant(
            ir::Tensor::Random(ir::TensorType{{8, 8, 3}, ir::DataType::kFloat32, ""}, 9));
        ir::ValueId strided =
            b.Call("conv1d", {x, w}, ir::Attrs{{"strides", std::vector<int64_t>{2}}});
        ir::IRModule module;
        module.Add(b.Finish(b.Call("concat", {strided, strided}, ir::Attrs{{"axis", int64_t{2}}})));
        return module;
      },
      "is neither an affine function of n nor a window of an operand's axis");
  // A split along the dynamic axis: the second part starts at n, past the first part's bound.
  testing::ExpectBuildError(
      [](int64_t n) {
        ir::GraphBuilder b("main");
        ir::ValueId x = b.Input("x", ir::TensorType{{2 * n, 4}, ir::DataType::kFloat32, ""});
        ir::ValueId parts =
            b.Call("split", {x},
                   ir::Attrs{{"axis", int64_t{0}}, {"sections", std::vector<int64_t>{n, n}}});
        ir::IRModule module;
        module.Add(b.Finish(b.TupleGetItem(parts, 1)));
        return module;
      },
      "walks axes of lengths n and 2*n");
  // A constant computed from n (not a slice of one table).
  testing::ExpectBuildError(
      [](int64_t n) {
        ir::GraphBuilder b("main");
        ir::ValueId x = b.Input("x", ir::TensorType{{n}, ir::DataType::kFloat32, ""});
        std::vector<float> ramp;
        for (int64_t i = 0; i < n; ++i)
          ramp.push_back(static_cast<float>(i) / static_cast<float>(n));
        ir::IRModule module;
        module.Add(
            b.Finish(b.Call("add", {x, b.Constant(ir::Tensor::FromFloats({n}, ramp), "ramp")})));
        return module;
      },
      "the constant %ramp [n] at n=15 is not the leading part of its value at n=16");
  // A graph that differs with n.
  testing::ExpectBuildError(
      [](int64_t n) {
        return n % 2 == 0 ? OneOp(n, "relu", {}, {-1}) : OneOp(n, "add", {}, {-1}, 2);
      },
      "node");
}

TEST(DynamicBuild, PipelinesMustEndWithLegalize) {
  EXPECT_EQ(pipelines::WithoutFinalLegalize("InferType, FuseOps(x=\"a,b\"), Legalize"),
            "InferType, FuseOps(x=\"a,b\")");
  EXPECT_EQ(pipelines::WithoutFinalLegalize("FoldConstant, Legalize(default_schedule=0)"),
            "FoldConstant");
  EXPECT_THROW(pipelines::WithoutFinalLegalize("FoldConstant, LegalizeAll"), ir::Error);
  EXPECT_TRUE(pipelines::IsPass("TuneKernels(trials=8)", "TuneKernels"));
  EXPECT_FALSE(pipelines::IsPass("TuneKernelsFast", "TuneKernels"));
  try {
    pipelines::WithoutFinalLegalize(
        pipelines::PipelineRegistry::Global().Get("default_tuning").text);
    ADD_FAILURE() << "default_tuning has no final Legalize";
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ends with 'TuneKernels'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
