// Convolutions in blocked layouts (NCHW16c data, OIHW16i16o weights): type inference, reference
// and compute definition agree with the plain convolution.
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/layout.h"
#include "ir/op_registry.h"
#include "kernels/compute/lower.h"
#include "kernels/default_schedule.h"

namespace tandem::kernels {
namespace {

ir::TensorType F32(ir::Shape s, std::string layout = "") {
  return ir::TensorType{std::move(s), ir::DataType::kFloat32, std::move(layout)};
}

struct BlockedCase {
  std::string data_layout, kernel_layout;
  int64_t c, o, hw, stride, pad;
};

TEST(BlockedConv, MatchesPlainConvolution) {
  for (const BlockedCase& k : std::vector<BlockedCase>{{"NCHW4c", "OIHW4i4o", 8, 8, 6, 1, 1},
                                                       {"NCHW4c", "OIHW4i8o", 8, 16, 7, 2, 1},
                                                       {"NCHW8c", "OIHW8o", 8, 16, 5, 1, 0},
                                                       {"NCHW", "OIHW2i4o", 6, 8, 5, 1, 1}}) {
    SCOPED_TRACE(k.data_layout + "/" + k.kernel_layout);
    ir::Attrs plain_attrs{{"padding", std::vector<int64_t>{k.pad, k.pad, k.pad, k.pad}},
                          {"strides", std::vector<int64_t>{k.stride, k.stride}}};
    ir::TensorType data = F32({1, k.c, k.hw, k.hw}), weight = F32({k.o, k.c, 3, 3});
    ir::Tensor x = ir::Tensor::Random(data, 1), w = ir::Tensor::Random(weight, 2);
    std::vector<ir::Type> plain_types{data, weight};
    ir::Attrs a = plain_attrs;
    ir::Type plain_out = ir::InferCallType("conv2d", plain_types, a);
    ir::Tensor expected = ir::EvaluateReference("conv2d", {x, w}, a, plain_out).at(0);

    ir::Layout dl(k.data_layout), kl(k.kernel_layout);
    ir::Tensor bx = ir::TransformLayout(x, ir::Layout("NCHW"), dl);
    ir::Tensor bw = ir::TransformLayout(w, ir::Layout("OIHW"), kl);
    ir::Attrs b = plain_attrs;
    b.Set("data_layout", k.data_layout);
    b.Set("kernel_layout", k.kernel_layout);
    std::vector<ir::Type> blocked_types{ir::TensorType{bx.shape(), bx.dtype(), ""},
                                        ir::TensorType{bw.shape(), bw.dtype(), ""}};
    ir::Type out = ir::InferCallType("conv2d", blocked_types, b);
    ir::Tensor got = ir::EvaluateReference("conv2d", {bx.WithLayout(""), bw.WithLayout("")}, b, out).at(0);
    ir::Tensor back = ir::TransformLayout(got, dl, ir::Layout("NCHW"));
    EXPECT_LT(ir::RelativeError(back, expected), 1e-12);

    ir::KernelFunction kernel = LowerOpCall("conv", "conv2d", b,
                                            {blocked_types[0].tensor(), blocked_types[1].tensor()}, out);
    auto compiled = backends::RunKernelReference(kernel, {bx.WithLayout(""), bw.WithLayout("")}, true);
    EXPECT_LT(ir::RelativeError(compiled[0], got), 1e-5);
    Schedule s = ApplyDefaultSchedule(kernel, DefaultScheduleOptions{.parallel_min_work = 16});
    auto scheduled = backends::RunKernelReference(s.function(), {bx.WithLayout(""), bw.WithLayout("")}, true);
    EXPECT_LT(ir::RelativeError(scheduled[0], got), 1e-5) << s.trace().ToText();
  }
}

TEST(BlockedConv, ShapeErrorsNameTheLayout) {
  ir::Attrs b{{"data_layout", std::string("NCHW4c")}, {"kernel_layout", std::string("OIHW4i4o")}};
  std::vector<ir::Type> types{F32({1, 2, 6, 6, 4}), F32({2, 2, 3, 3, 4})};  // weight rank 5, needs 6
  EXPECT_THROW(ir::InferCallType("conv2d", types, b), ir::Error);
}

}  // namespace
}  // namespace tandem::kernels
