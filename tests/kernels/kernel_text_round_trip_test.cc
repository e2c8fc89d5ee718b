// The kernel text form on realistic kernels: every op of the op-case table lowered and
// scheduled (default schedules with several options, and random schedules of the schedule
// fuzzer) prints, parses back structurally equal with the same hash, prints to the same text and
// computes bit-identical outputs; and whole models legalized into call_kernel modules round-trip
// through PrintModule/ParseModule, verify, and compute what they computed before.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/kernel/kernel_parser.h"
#include "ir/kernel/kernel_printer.h"
#include "ir/kernel/kernel_structural.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "kernels/default_schedule.h"
#include "kernels/legalize.h"
#include "tests/common/op_cases.h"
#include "tests/kernels/schedule_fuzzer.h"
#include "tests/kernels/schedule_test_util.h"

namespace tandem::kernels {
namespace {

using testing::F32;
using testing::LowerOp;

bool SameBytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.type() == b.type() && a.bytes().size() == b.bytes().size() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

// Prints `kernel`, parses it back and checks equality, hash, the reprinted text and (when
// `run`) that both compute the same bytes. Returns false (after reporting) on a mismatch.
bool RoundTrips(const ir::KernelFunction& kernel, const std::string& label, bool run) {
  std::string text = ir::PrintKernel(kernel);
  ir::KernelFunction parsed;
  try {
    parsed = ir::ParseKernel(text, label);
  } catch (const ir::Error& e) {
    ADD_FAILURE() << label << ": the printed kernel does not parse: " << e.what() << "\n" << text;
    return false;
  }
  std::string diff = ir::StructuralDiff(kernel, parsed);
  if (!diff.empty()) {
    ADD_FAILURE() << label << ": parsed kernel differs: " << diff << "\n" << text;
    return false;
  }
  EXPECT_EQ(ir::StructuralHash(kernel), ir::StructuralHash(parsed)) << label;
  std::string again = ir::PrintKernel(parsed);
  if (again != text) {
    ADD_FAILURE() << label << ": printing the parsed kernel gives other text:\n"
                  << text << "---\n"
                  << again;
    return false;
  }
  if (run) {
    std::vector<ir::Tensor> inputs = testing::RandomArgs(kernel, 11);
    std::vector<ir::Tensor> want = backends::RunKernelReference(kernel, inputs, true);
    std::vector<ir::Tensor> got = backends::RunKernelReference(parsed, inputs, true);
    for (size_t i = 0; i < want.size(); ++i) {
      if (!SameBytes(want[i], got[i])) {
        ADD_FAILURE() << label << ": output " << i << " differs after the round trip\n" << text;
        return false;
      }
    }
  }
  return true;
}

ir::KernelFunction Lower(const tandem::testing::Case& c) {
  std::vector<ir::Type> types(c.inputs.begin(), c.inputs.end());
  ir::Attrs attrs = c.attrs;
  ir::Type out = ir::InferCallType(c.op, types, attrs);
  return LowerOpCall(c.op + "_" + c.label, c.op, attrs, c.inputs, out);
}

TEST(KernelTextRoundTrip, EveryOpCaseLoweredAndDefaultScheduled) {
  DefaultScheduleOptions narrow;
  narrow.vector_lanes = 4;
  narrow.parallel_min_work = 1;
  narrow.num_threads = 4;
  int kernels = 0;
  int scheduled_loops = 0;
  for (const tandem::testing::Case& c : tandem::testing::AllCases()) {
    std::string label = c.op + "/" + c.label;
    ir::KernelFunction lowered = Lower(c);
    std::vector<std::pair<std::string, ir::KernelFunction>> variants = {
        {"lowered", lowered},
        {"default", ApplyDefaultSchedule(lowered).function()},
        {"narrow", ApplyDefaultSchedule(lowered, narrow).function()}};
    for (const auto& [variant, kernel] : variants) {
      ++kernels;
      ir::VisitStmtTree(kernel.body, [&](const ir::Stmt& s) {
        const auto* loop = ir::As<ir::ForNode>(s);
        scheduled_loops += loop && loop->for_kind != ir::ForKind::kSerial;
      });
      if (!RoundTrips(kernel, label + "/" + variant, /*run=*/variant == "narrow")) return;
    }
  }
  EXPECT_GE(kernels, 300);
  EXPECT_GT(scheduled_loops, 100);  // the default schedules did produce non-serial loops
}

// Random schedules (splits, reorders, fusion, cache_read/write, compute_at, inlining, rfactor,
// decompose_reduction, transform_layout, annotations) of matmul, conv2d and a fused kernel.
TEST(KernelTextRoundTrip, RandomlyScheduledKernels) {
  struct Workload {
    std::string name;
    ir::KernelFunction kernel;
  };
  std::vector<Workload> workloads = {
      {"matmul", testing::Matmul(12, 10, 8)},
      {"conv2d", testing::Conv2d(3, 4, 6, 1)},
      {"conv_bias_relu", testing::ConvBiasRelu(2, 4, 5)},
      {"softmax", LowerOp("softmax", {F32({3, 10})}, ir::Attrs{{"axis", int64_t{-1}}})},
      {"max_pool2d", LowerOp("max_pool2d", {F32({1, 2, 7, 7})},
                             ir::Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                                       {"strides", std::vector<int64_t>{2, 2}},
                                       {"padding", std::vector<int64_t>{1, 1, 1, 1}}})},
  };
  testing::FuzzCounts counts;
  int kernels = 0;
  for (const Workload& workload : workloads) {
    for (uint64_t seed = 0; seed < 50; ++seed) {
      Schedule schedule(workload.kernel, seed);
      testing::ScheduleFuzzer fuzzer(schedule, seed * 31 + workload.name.size(), counts);
      fuzzer.Run(12);
      ++kernels;
      std::string label =
          fmt::format("{} seed {} [{}]", workload.name, seed, fmt::join(fuzzer.applied(), ", "));
      if (!RoundTrips(schedule.function(), label, /*run=*/seed % 5 == 0)) return;
    }
  }
  EXPECT_EQ(kernels, 250);
  EXPECT_GT(counts.applied, 1000);
  for (const char* kind : {"split", "cache_read", "compute_at", "rfactor", "parallel"}) {
    EXPECT_GT(counts.by_kind[kind].applied, 0) << kind;
  }
}

// ---- legalized models ----

ir::Tensor Weight(ir::Shape shape, uint64_t seed, double scale = 0.3) {
  ir::Tensor t =
      ir::Tensor::Random(ir::TensorType{std::move(shape), ir::DataType::kFloat32, ""}, seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, t.GetDouble(i) * scale);
  return t;
}

// A ResNet basic block (conv - batch_norm - relu - conv - batch_norm, add, relu) where the
// second conv, its batch norm, the shortcut add and the relu form one fusion group.
ir::IRModule ResNetBlock() {
  const int64_t c = 4, hw = 6;
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("data", F32({1, c, hw, hw}));
  ir::Attrs pad{{"padding", std::vector<int64_t>{1, 1, 1, 1}}};
  auto bn = [&](ir::ValueId v, uint64_t seed) {
    ir::Tensor variance = Weight({c}, seed + 3);
    for (int64_t i = 0; i < c; ++i) variance.SetDouble(i, 1.0 + std::abs(variance.GetDouble(i)));
    return b.Call("batch_norm",
                  {v, b.Constant(Weight({c}, seed)), b.Constant(Weight({c}, seed + 1)),
                   b.Constant(Weight({c}, seed + 2)), b.Constant(variance)});
  };
  ir::ValueId y = b.Call("conv2d", {x, b.Constant(Weight({c, c, 3, 3}, 1))}, pad);
  y = b.Call("relu", {bn(y, 10)});
  ir::ValueId w2 = b.Constant(Weight({c, c, 3, 3}, 2));
  ir::ValueId conv2 = b.Call("conv2d", {y, w2}, pad);
  ir::ValueId bn2 = bn(conv2, 20);
  ir::ValueId sum = b.Call("add", {bn2, x});
  ir::ValueId out = b.Call("relu", {sum});
  for (ir::ValueId id : {conv2, bn2, sum, out}) b.Annotate(id, "group", int64_t{0});
  ir::IRModule module;
  module.Add(b.Finish(out));
  return module;
}

// A small transformer layer: attention with softmax, layer norm, a GELU MLP.
ir::IRModule TransformerLayer() {
  const int64_t seq = 4, hidden = 8, ffn = 16;
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("hidden_states", F32({1, seq, hidden}));
  ir::ValueId q = b.Call("matmul", {x, b.Constant(Weight({hidden, hidden}, 1))});
  ir::ValueId k = b.Call("matmul", {x, b.Constant(Weight({hidden, hidden}, 2))});
  ir::ValueId v = b.Call("matmul", {x, b.Constant(Weight({hidden, hidden}, 3))});
  ir::ValueId kt = b.Call("transpose", {k}, ir::Attrs{{"axes", std::vector<int64_t>{0, 2, 1}}});
  ir::ValueId scores = b.Call("matmul", {q, kt});
  ir::ValueId probs = b.Call("softmax", {scores}, ir::Attrs{{"axis", int64_t{-1}}});
  ir::ValueId attention = b.Call("matmul", {probs, v});
  ir::ValueId residual = b.Call("add", {attention, x});
  ir::ValueId norm = b.Call("layer_norm", {residual, b.Constant(Weight({hidden}, 4, 1.0)),
                                           b.Constant(Weight({hidden}, 5))});
  ir::ValueId up = b.Call("matmul", {norm, b.Constant(Weight({hidden, ffn}, 6))});
  ir::ValueId biased = b.Call("add", {up, b.Constant(Weight({ffn}, 7))});
  ir::ValueId act = b.Call("gelu", {biased});
  b.Annotate(up, "group", int64_t{1});
  b.Annotate(biased, "group", int64_t{1});
  b.Annotate(act, "group", int64_t{1});
  ir::ValueId down = b.Call("matmul", {act, b.Constant(Weight({ffn, hidden}, 8))});
  ir::ValueId out = b.Call("add", {down, norm});
  ir::IRModule module;
  module.Add(b.Finish(out));
  return module;
}

// A MobileNetV2 inverted residual block: expand 1x1 - depthwise 3x3 (stride 2) - project 1x1,
// each followed by batch norm (and clip(0, 6) but for the projection).
ir::IRModule InvertedResidual() {
  const int64_t in = 4, hidden = 8, out = 6;
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("data", F32({1, in, 7, 7}));
  auto bn = [&](ir::ValueId v, int64_t c, uint64_t seed) {
    ir::Tensor variance = Weight({c}, seed + 3);
    for (int64_t i = 0; i < c; ++i) variance.SetDouble(i, 1.0 + std::abs(variance.GetDouble(i)));
    return b.Call("batch_norm",
                  {v, b.Constant(Weight({c}, seed)), b.Constant(Weight({c}, seed + 1)),
                   b.Constant(Weight({c}, seed + 2)), b.Constant(variance)});
  };
  auto clip = [&](ir::ValueId v) {
    return b.Call("clip", {v}, ir::Attrs{{"min", 0.0}, {"max", 6.0}});
  };
  ir::ValueId y = b.Call("conv2d", {x, b.Constant(Weight({hidden, in, 1, 1}, 1))});
  y = clip(bn(y, hidden, 10));
  y = b.Call("conv2d", {y, b.Constant(Weight({hidden, 1, 3, 3}, 2))},
             ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"groups", hidden}});
  ir::ValueId depthwise_bn = bn(y, hidden, 20);
  ir::ValueId depthwise = clip(depthwise_bn);
  b.Annotate(depthwise_bn, "group", int64_t{3});
  b.Annotate(depthwise, "group", int64_t{3});
  y = b.Call("conv2d", {depthwise, b.Constant(Weight({out, hidden, 1, 1}, 3))});
  ir::IRModule module;
  module.Add(b.Finish(bn(y, out, 30)));
  return module;
}

// A pooling / reduction / reshape head returning two results.
ir::IRModule PoolingHead() {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("data", F32({1, 3, 7, 7}));
  ir::ValueId pooled = b.Call("max_pool2d", {x},
                              ir::Attrs{{"pool_size", std::vector<int64_t>{3, 3}},
                                        {"strides", std::vector<int64_t>{2, 2}},
                                        {"padding", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::ValueId mean = b.Call("global_avg_pool2d", {pooled});
  ir::ValueId flat = b.Call("reshape", {mean}, ir::Attrs{{"newshape", std::vector<int64_t>{1, 3}}});
  ir::ValueId dense = b.Call("matmul", {flat, b.Constant(Weight({3, 5}, 9))});
  ir::ValueId sig = b.Call("sigmoid", {dense});
  ir::ValueId total = b.Call("sum", {pooled}, ir::Attrs{{"axes", std::vector<int64_t>{2, 3}}});
  ir::IRModule module;
  module.Add(b.Finish(std::vector<ir::ValueId>{sig, total}));
  return module;
}

TEST(KernelTextRoundTrip, LegalizedModelsRoundTripAndComputeTheSame) {
  struct Model {
    std::string name;
    ir::IRModule module;
  };
  std::vector<Model> models = {{"resnet_block", ResNetBlock()},
                               {"transformer", TransformerLayer()},
                               {"inverted_residual", InvertedResidual()},
                               {"pooling", PoolingHead()}};
  for (const Model& model : models) {
    SCOPED_TRACE(model.name);
    ir::IRModule legalized = Legalize(model.module);
    ASSERT_FALSE(legalized.kernel_functions().empty());
    std::string text = ir::PrintModule(legalized);
    ir::IRModule parsed;
    try {
      parsed = ir::ParseModule(text, model.name);
    } catch (const ir::Error& e) {
      FAIL() << e.what() << "\n" << text;
    }
    EXPECT_EQ(ir::StructuralDiff(legalized, parsed), "") << text;
    EXPECT_TRUE(ir::StructuralEqual(legalized, parsed));
    EXPECT_EQ(ir::StructuralHash(legalized), ir::StructuralHash(parsed));
    EXPECT_EQ(ir::PrintModule(parsed), text);
    EXPECT_NO_THROW(ir::Verify(parsed));
    bool has_multi_block_kernel = false;
    for (const auto& [name, kernel] : parsed.kernel_functions()) {
      has_multi_block_kernel = has_multi_block_kernel || name.rfind("fused", 0) == 0;
    }
    EXPECT_EQ(has_multi_block_kernel, model.name != "pooling");

    const ir::GraphFunction& main = legalized.Get("main");
    std::vector<ir::Tensor> inputs = backends::RandomInputs(main, 5);
    std::vector<ir::Tensor> before = backends::RunReference(legalized, inputs);
    std::vector<ir::Tensor> after = backends::RunReference(parsed, inputs);
    std::vector<ir::Tensor> graph = backends::RunReference(model.module, inputs);
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_TRUE(SameBytes(before[i], after[i])) << "output " << i;
      EXPECT_LT(ir::RelativeError(after[i], graph[i]), 1e-4) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
