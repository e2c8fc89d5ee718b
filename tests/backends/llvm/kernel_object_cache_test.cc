// The process-wide cache of compiled kernel objects: kernels of the same structure and options
// compile once, whatever their names, and every module that links a cached object computes what
// the kernel reference interpreter computes.
#include "backends/llvm/kernel_object_cache.h"

#include <gtest/gtest.h>

#include "backends/llvm/codegen.h"
#include "ir/error.h"
#include "tests/backends/kernel_test_util.h"

namespace tandem {
namespace {

using backends::KernelObjectCache;
using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::Var;

std::shared_ptr<const std::string> Bytes(size_t n, char c) {
  return std::make_shared<const std::string>(n, c);
}

TEST(KernelObjectCache, DropsTheLeastRecentlyUsedPastItsBudget) {
  KernelObjectCache cache(250);
  cache.Insert("a", Bytes(100, 'a'));
  cache.Insert("b", Bytes(100, 'b'));
  ASSERT_NE(cache.Find("a"), nullptr);  // "a" is now the most recent
  cache.Insert("c", Bytes(100, 'c'));   // 300 bytes: "b" goes
  EXPECT_EQ(cache.Find("b"), nullptr);
  ASSERT_NE(cache.Find("a"), nullptr);
  EXPECT_EQ(*cache.Find("c"), std::string(100, 'c'));
  KernelObjectCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.objects, 2);
  EXPECT_EQ(stats.bytes, 200);
  EXPECT_EQ(stats.hits, 3);
  EXPECT_EQ(stats.misses, 1);
  // An object larger than the budget is kept alone; replacing a key does not count it twice.
  cache.Insert("huge", Bytes(400, 'h'));
  EXPECT_EQ(cache.stats().objects, 1);
  cache.Insert("huge", Bytes(10, 'h'));
  EXPECT_EQ(cache.stats().bytes, 10);
}

// out[i] = a[i] * scale + 1
ir::KernelFunction Scale(const std::string& name, double scale) {
  Buffer a = ir::MakeBuffer("a", DataType::kFloat32, {64});
  Buffer out = ir::MakeBuffer("out", DataType::kFloat32, {64});
  Var i = ir::MakeVar("i"), vi = ir::MakeVar("vi");
  ir::Stmt block = testing::MakeBlock(
      "scale", {{vi, 64, ir::IterKind::kSpatial, i}},
      ir::MakeStore(out, {vi}, ir::Load(a, {vi}) * ir::FloatImm(scale) + ir::FloatImm(1.0)));
  return testing::Kernel(name, {a, out},
                         testing::Root(testing::Loop(i, 64, block, ir::ForKind::kVectorized)));
}

std::vector<float> RunCompiled(const backends::CompiledModule& module, const std::string& name,
                               const ir::Tensor& input) {
  std::vector<ir::Tensor> outputs = module.Run(name, {input}, /*allocate_outputs=*/true);
  const float* data = outputs[0].data<float>();
  return std::vector<float>(data, data + outputs[0].num_elements());
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) EXPECT_NEAR(actual[k], expected[k], 1e-5) << k;
}

TEST(KernelObjectCache, CompileKernelsReusesObjectsAcrossNamesAndModules) {
  ir::Tensor input = ir::Tensor::Random(ir::TensorType{{64}, DataType::kFloat32, ""}, 7, -1, 1);
  auto expected = [&](double scale) {
    std::vector<float> values;
    for (int64_t k = 0; k < 64; ++k) {
      values.push_back(input.data<float>()[k] * static_cast<float>(scale) + 1.0f);
    }
    return values;
  };
  // A scale no other test compiles, so that the first compilation below is a miss.
  const double scale = 3.0517578125e-3;
  KernelObjectCache::Stats before = KernelObjectCache::Global().stats();
  auto first = backends::CompileKernels({Scale("first_name", scale), Scale("other", 2.5)});
  KernelObjectCache::Stats after_first = KernelObjectCache::Global().stats();
  EXPECT_GE(after_first.misses - before.misses, 1);
  // The same structure under two names in one module, and again in a second module: no new
  // compilation, and each name runs its code.
  auto second = backends::CompileKernels({Scale("second_name", scale), Scale("third_name", scale)});
  KernelObjectCache::Stats after_second = KernelObjectCache::Global().stats();
  EXPECT_EQ(after_second.misses, after_first.misses);
  EXPECT_EQ(after_second.hits - after_first.hits, 1);  // one object for both names
  ExpectNear(RunCompiled(*first, "first_name", input), expected(scale));
  ExpectNear(RunCompiled(*first, "other", input), expected(2.5));
  ExpectNear(RunCompiled(*second, "second_name", input), expected(scale));
  ExpectNear(RunCompiled(*second, "third_name", input), expected(scale));
  EXPECT_THROW(second->Run("first_name", {input}, true), ir::Error);
  // Other code generation options are another object.
  backends::CodegenOptions unoptimized;
  unoptimized.opt_level = 0;
  auto third = backends::CompileKernels({Scale("first_name", scale)}, unoptimized);
  EXPECT_EQ(KernelObjectCache::Global().stats().misses - after_second.misses, 1);
  ExpectNear(RunCompiled(*third, "first_name", input), expected(scale));
  testing::ExpectMatchesReference(Scale("checked", scale));
}

TEST(KernelObjectCache, KernelObjectsCachedSaysWhetherThereIsAnythingToCompile) {
  // A scale no other test compiles.
  const double scale = 6.103515625e-5;
  KernelObjectCache::Stats before = KernelObjectCache::Global().stats();
  EXPECT_FALSE(backends::KernelObjectsCached({Scale("k", scale)}));
  EXPECT_TRUE(backends::KernelObjectsCached({}));
  backends::CompileKernelObjects({Scale("k", scale)});
  KernelObjectCache::Stats compiled = KernelObjectCache::Global().stats();
  EXPECT_EQ(compiled.misses - before.misses, 1);  // the question counted no miss
  // Any name, once compiled; not with other options, nor with another kernel beside it.
  EXPECT_TRUE(backends::KernelObjectsCached({Scale("other_name", scale)}));
  backends::CodegenOptions unoptimized;
  unoptimized.opt_level = 0;
  EXPECT_FALSE(backends::KernelObjectsCached({Scale("k", scale)}, unoptimized));
  EXPECT_FALSE(backends::KernelObjectsCached({Scale("k", scale), Scale("new", scale * 3)}));
  KernelObjectCache::Stats after = KernelObjectCache::Global().stats();
  EXPECT_EQ(after.hits, compiled.hits);
  EXPECT_EQ(after.misses, compiled.misses);
}

}  // namespace
}  // namespace tandem
