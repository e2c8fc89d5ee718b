// TuneBackendPlacement under a budget too small for every piece: a side of a kind of piece that
// lost by far at the first anchors is not measured at the rest (HopelessSides), and the pieces
// leave the kernels tuned after them a share of the budget as large as our kernels' share of the
// cover.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backends/reference/interpreter.h"
#include "backends/runtime/executable.h"
#include "passes/pipeline_text.h"
#include "passes/tuning/hopeless_sides.h"
#include "tests/common/mock_tuning.h"

namespace tandem {
namespace {

TEST(HopelessSides, NeedsEveryMeasuredAnchorLostByTheFactor) {
  passes::HopelessSides sides(1.5, 2);
  sides.Add("conv", 3.0, 1.0);
  EXPECT_FALSE(sides.IsHopeless("conv", /*own=*/true));  // one anchor is not enough
  sides.Add("conv", 2.0, 1.0);
  EXPECT_TRUE(sides.IsHopeless("conv", /*own=*/true));
  EXPECT_FALSE(sides.IsHopeless("conv", /*own=*/false));
  sides.Add("conv", 1.2, 1.0);  // a close one: measure on
  EXPECT_FALSE(sides.IsHopeless("conv", /*own=*/true));
  sides.Add("matmul", 1.0, 2.0);
  sides.Add("matmul", 1.0, 1.6);
  EXPECT_TRUE(sides.IsHopeless("matmul", /*own=*/false));
  EXPECT_FALSE(sides.IsHopeless("other", /*own=*/true));
}

TEST(PieceKind, LeavesOutShapesAndTheGroupCount) {
  ir::GraphBuilder b("main");
  ir::ValueId x = b.Input("x", ir::TensorType{{1, 8, 10, 10}});
  ir::Attrs depthwise{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{8}}};
  ir::ValueId w8 = b.Constant(ir::Tensor::Random(ir::TensorType{{8, 1, 3, 3}}, 1, -1, 1));
  ir::ValueId a = b.Call("conv2d", {x, w8}, depthwise, "a");
  ir::ValueId pointwise_w = b.Constant(ir::Tensor::Random(ir::TensorType{{16, 8, 1, 1}}, 2, -1, 1));
  ir::ValueId c = b.Call("conv2d", {a, pointwise_w}, {}, "c");
  ir::Attrs depthwise16{{"padding", std::vector<int64_t>{1, 1, 1, 1}}, {"groups", int64_t{16}}};
  ir::ValueId w16 = b.Constant(ir::Tensor::Random(ir::TensorType{{16, 1, 3, 3}}, 3, -1, 1));
  ir::ValueId d = b.Call("conv2d", {c, w16}, depthwise16, "d");
  ir::GraphFunction function = b.Finish(d);
  EXPECT_EQ(passes::PieceKind(function, {a}), passes::PieceKind(function, {d}));
  EXPECT_NE(passes::PieceKind(function, {a}), passes::PieceKind(function, {c}));
}

// oneDNN calls take 1 ms, each of our kernels `own_ms` (5: ours is hopeless everywhere). Records,
// for every measured piece with a convolution (ours or oneDNN's), the block it belongs to (the
// largest number in its node names) and whether it calls oneDNN.
class ConvolutionCostRunner : public tuning::Runner {
 public:
  explicit ConvolutionCostRunner(double own_ms) : own_ms_(own_ms) {}
  std::vector<tuning::MeasureResult> Run(const std::vector<tuning::RunInput>& inputs,
                                         const tuning::MeasureOptions&) override {
    std::vector<tuning::MeasureResult> results;
    for (const tuning::RunInput& input : inputs) {
      double ms = 0.01;
      int block = 0;
      bool placed = false, convolution = false;
      for (const ir::Node& node : input.executable->module().Get("main").nodes) {
        placed |= node.kind == ir::NodeKind::kCallExtern;
        convolution |=
            node.kind == ir::NodeKind::kCallExtern ||
            (node.kind == ir::NodeKind::kCallKernel && node.op.find("conv2d") != std::string::npos);
        if (node.kind == ir::NodeKind::kCallExtern) ms += 1.0;
        if (node.kind == ir::NodeKind::kCallKernel) ms += own_ms_;
        size_t digits = node.name.find_first_of("0123456789");
        if (digits != std::string::npos) {
          block = std::max(block, std::stoi(node.name.substr(digits)));
        }
      }
      if (convolution) measured.push_back({block, placed});
      results.push_back(tuning::MeasureResult::FromRunSeconds({ms * 1e-3, ms * 1e-3}, 0));
    }
    return results;
  }
  std::vector<std::pair<int, bool>> measured;

 private:
  double own_ms_;
};

// Twelve convolution blocks of growing width (no two alike, so no piece shares a time).
ir::IRModule TwelveConvolutionBlocks() {
  ir::GraphBuilder b("main");
  int64_t width = 4;
  ir::ValueId y = b.Input("x", ir::TensorType{{1, width, 8, 8}});
  for (int block = 1; block <= 12; ++block) {
    int64_t next = width + 1;
    ir::ValueId w =
        b.Constant(ir::Tensor::Random(ir::TensorType{{next, width, 3, 3}}, block, -0.5, 0.5));
    y = b.Call("conv2d", {y, w}, ir::Attrs{{"padding", std::vector<int64_t>{1, 1, 1, 1}}},
               fmt::format("conv{}", block));
    y = b.Call("relu", {y}, {}, fmt::format("relu{}", block));
    width = next;
  }
  ir::IRModule model;
  model.Add(b.Finish(y));
  return model;
}

std::shared_ptr<tuning::TuningSession> SessionWith(std::shared_ptr<tuning::Runner> runner,
                                                   int64_t max_measurements) {
  tuning::TuningSession::Options options;
  options.measure.repeats = 2;
  options.max_measurements = max_measurements;
  return std::make_shared<tuning::TuningSession>(ir::Target{}, tuning::MakeInMemoryDatabase(),
                                                 std::make_shared<tuning::LocalBuilder>(),
                                                 std::move(runner), options);
}

TEST(TuneBackendPlacement, ASideHopelessAtTheFirstAnchorsIsNotMeasuredAtTheRest) {
  ir::IRModule model = TwelveConvolutionBlocks();
  passes::PassContext context;
  auto runner = std::make_shared<ConvolutionCostRunner>(/*own_ms=*/5.0);
  context.tuning = SessionWith(runner, 4 + 20);
  ir::IRModule output = context.RunPipeline(
      *passes::ParsePipeline("InferType, TuneBackendPlacement(eval=[FuseOps])"), model);
  // The first round (8 pieces) compares the first 3 blocks both ways; after it, no piece of
  // ours alone is measured, the budget goes to oneDNN's pieces of the later blocks.
  int own_pieces_late = 0, placed_pieces_late = 0;
  for (const auto& [block, placed] : runner->measured) {
    if (block <= 4 || block == 12) continue;  // 12: the whole modules' last block
    ++(placed ? placed_pieces_late : own_pieces_late);
  }
  EXPECT_EQ(own_pieces_late, 0);
  EXPECT_GT(placed_pieces_late, 0);
  // The placement computes what the model computes.
  EXPECT_LT(testing::ErrorAgainstReference(output, model, 2), 1e-4);
}

// The measurements TuneBackendPlacement(keep=1, eval=[FuseOps, TuneKernels]) spends on its pieces
// under a budget of 40 (36 for the pieces at most) when each of our kernels takes `own_ms`.
int64_t PieceMeasurements(double own_ms) {
  ir::IRModule model = TwelveConvolutionBlocks();
  passes::PassContext context;
  context.tuning = SessionWith(std::make_shared<ConvolutionCostRunner>(own_ms), 40);
  ir::IRModule output = context.RunPipeline(
      *passes::ParsePipeline("InferType, TuneBackendPlacement(keep=1, eval=[FuseOps, "
                             "TuneKernels(trials=2, batch=2)])"),
      model);
  EXPECT_LT(testing::ErrorAgainstReference(output, model, 3), 1e-4);
  int64_t measured = 0;
  for (const auto& [pass, counts] : context.tuning->counts()) {
    if (pass.starts_with("TuneBackendPlacement")) measured += counts.measured;
  }
  return measured;
}

TEST(TuneBackendPlacement, PiecesLeaveTheKernelsAShareAsLargeAsOursInTheCover) {
  // Ours wins every anchor: the cover is all ours, the kernels keep half, and the pieces stop
  // at the first round past it (24 of 36; then the whole-module placements and the tuned one).
  int64_t own_cover = PieceMeasurements(/*own_ms=*/0.2);
  EXPECT_LE(own_cover, 24 + 5);
  // oneDNN wins every anchor: nothing of ours to tune, the pieces go on past half (18).
  int64_t backend_cover = PieceMeasurements(/*own_ms=*/5.0);
  EXPECT_GE(backend_cover, 32);
}

}  // namespace
}  // namespace tandem
