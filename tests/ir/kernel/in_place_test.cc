// InPlacePairs: which kernel outputs may take an input's memory, on hand-written kernels and on
// the kernels lowering makes; and a kernel run with the pair in one buffer computes what it
// computes with separate buffers.
#include "ir/kernel/in_place.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "backends/llvm/codegen.h"
#include "ir/kernel/kernel_parser.h"

namespace tandem::ir {
namespace {

std::vector<InPlacePair> Pairs(const char* text) {
  return InPlacePairs(ParseKernel(text));
}

TEST(InPlacePairs, AnElementwiseOutputPairsWithItsFirstSameShapedInput) {
  std::vector<InPlacePair> pairs = Pairs(R"(
    kernel @add(%a: f32[4,8], %b: f32[8], %c: f32[4,8]) -> (%out: f32[4,8]) {
      block root() {
        for %i in 4 {
          for %j in 8 {
            block add(%vi: spatial 4 = %i, %vj: spatial 8 = %j) {
              %out[%vi, %vj] = max(%a[%vi, %vj] + %b[%vj] + %c[%vi, %vj], 0.0)
            }
          }
        }
      }
    })");
  EXPECT_EQ(pairs, (std::vector<InPlacePair>{{0, 3}}));
}

TEST(InPlacePairs, AReadAtAnotherIndexOrOutsideTheStoreRulesTheInputOut) {
  // %out is stored in both branches of an if: no pair at all.
  std::vector<InPlacePair> pairs = Pairs(R"(
    kernel @k(%a: f32[8], %c: f32[8], %d: f32[8]) -> (%out: f32[8]) {
      block root() {
        for %i in 8 {
          block k(%v: spatial 8 = %i) {
            if %c[%v] > 0.0 {
              %out[%v] = %a[min(%v + 1, 7)] + %c[%v] + %d[%v]
            } else {
              %out[%v] = 0.0
            }
          }
        }
      }
    })");
  EXPECT_TRUE(pairs.empty());
  // One store; %a is read at a neighbour's index, %c and %d only at the store's own.
  pairs = Pairs(R"(
    kernel @k(%a: f32[8], %c: f32[8], %d: f32[8]) -> (%out: f32[8]) {
      block root() {
        for %i in 8 {
          block k(%v: spatial 8 = %i) {
            %out[%v] = select(%c[%v] > 0.0, %a[min(%v + 1, 7)] + %c[%v] + %d[%v], 0.0)
          }
        }
      }
    })");
  EXPECT_EQ(pairs, (std::vector<InPlacePair>{{1, 3}}));  // %c: all its reads are in the store
}

TEST(InPlacePairs, OutputsWrittenMoreThanOnceOrReadBackHaveNoPair) {
  // A reduction into the output: every element is written once per k.
  EXPECT_TRUE(Pairs(R"(
    kernel @sum(%a: f32[4,8], %b: f32[4]) -> (%out: f32[4]) {
      block root() {
        for %i in 4 {
          for %k in 8 {
            block sum(%vi: spatial 4 = %i, %vk: reduce 8 = %k) {
              init { %out[%vi] = 0.0 }
              %out[%vi] = %out[%vi] + %a[%vi, %vk] + %b[%vi]
            }
          }
        }
      }
    })")
                  .empty());
  // A loop that does not feed the block's bindings repeats the store.
  EXPECT_TRUE(Pairs(R"(
    kernel @again(%a: f32[8]) -> (%out: f32[8]) {
      block root() {
        for %r in 2 {
          for %i in 8 {
            block again(%v: spatial 8 = %i) { %out[%v] = %a[%v] * 2.0 }
          }
        }
      }
    })")
                  .empty());
  // Without the repeating loop the same kernel pairs.
  EXPECT_EQ(Pairs(R"(
    kernel @once(%a: f32[8]) -> (%out: f32[8]) {
      block root() {
        for %i in 8 {
          block once(%v: spatial 8 = %i) { %out[%v] = %a[%v] * 2.0 }
        }
      }
    })"),
            (std::vector<InPlacePair>{{0, 1}}));
  // The same without blocks: a repeating loop around the store rules it out too.
  EXPECT_TRUE(Pairs(R"(
    kernel @again(%a: f32[8]) -> (%out: f32[8]) {
      block root() {
        for %r in 2 { for %i in 8 { %out[%i] = %a[%i] * 2.0 } }
      }
    })")
                  .empty());
  EXPECT_EQ(Pairs(R"(
    kernel @once(%a: f32[8]) -> (%out: f32[8]) {
      block root() {
        for %i in 8 { %out[%i] = %a[%i] * 2.0 }
      }
    })"),
            (std::vector<InPlacePair>{{0, 1}}));
  // Another dtype or shape never pairs.
  EXPECT_TRUE(Pairs(R"(
    kernel @cast(%a: i32[8], %b: f32[2,4]) -> (%out: f32[8]) {
      block root() {
        for %i in 8 {
          block cast(%v: spatial 8 = %i) {
            %out[%v] = cast<f32>(%a[%v]) + %b[floordiv(%v, 4), floormod(%v, 4)]
          }
        }
      }
    })")
                  .empty());
}

// Compiled (parallel and vectorized) and run with the output in the paired input's buffer, a
// kernel gives what it gives with separate buffers: the contract the execution plan relies on.
TEST(InPlacePairs, CompiledCodeRunInPlaceComputesTheSameResult) {
  KernelFunction kernel = ParseKernel(R"(
    kernel @epilogue(%x: f32[6,32], %w: f32[32,32], %residual: f32[6,32]) -> (%out: f32[6,32]) {
      block root() alloc(%acc: f32[6,32] local) {
        for %i in 6 parallel {
          for %j in 32 {
            for %k in 32 {
              block mm(%vi: spatial 6 = %i, %vj: spatial 32 = %j, %vk: reduce 32 = %k) {
                init { %acc[%vi, %vj] = 0.0 }
                %acc[%vi, %vj] = %acc[%vi, %vj] + %x[%vi, %vk] * %w[%vk, %vj]
              }
            }
          }
          for %j in 32 vectorized {
            block epilogue(%ei: spatial 6 = %i, %ej: spatial 32 = %j) {
              %out[%ei, %ej] = max(%acc[%ei, %ej] + %residual[%ei, %ej], 0.0)
            }
          }
        }
      }
    })");
  ASSERT_EQ(InPlacePairs(kernel), (std::vector<InPlacePair>{{2, 3}}));
  TensorType type{{6, 32}, DataType::kFloat32, ""};
  Tensor x = Tensor::Random(type, 1);
  Tensor w = Tensor::Random(TensorType{{32, 32}, DataType::kFloat32, ""}, 2);
  Tensor residual = Tensor::Random(type, 3);
  std::unique_ptr<backends::CompiledModule> compiled = backends::CompileKernels({kernel}, {});
  Tensor separate(type);
  compiled->Run(kernel.name, {x, w, residual, separate});
  Tensor shared = residual.Clone();
  compiled->Run(kernel.name, {x, w, shared, shared});
  EXPECT_EQ(std::memcmp(shared.raw_data(), separate.raw_data(), separate.num_bytes()), 0);
}

}  // namespace
}  // namespace tandem::ir
