// Helpers shared by the compute-definition tests: a structural checker of the IR shape every
// lowered kernel must have, and comparison of kernel results against the graph reference.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "backends/reference/kernel_interpreter.h"
#include "ir/graph.h"
#include "ir/kernel/functor.h"
#include "ir/kernel/stmt.h"
#include "ir/tensor.h"

namespace tandem::kernels::testing {

// A compute block as found under the root: the block and the loops around it, outermost first.
struct FoundBlock {
  const ir::BlockNode* block = nullptr;
  const ir::BlockRealizeNode* realize = nullptr;
  std::vector<const ir::ForNode*> loops;
};

inline const ir::BlockNode* RootBlock(const ir::KernelFunction& function) {
  const auto* realize = ir::As<ir::BlockRealizeNode>(function.body);
  return realize == nullptr ? nullptr : realize->block.get();
}

// The blocks of `function` in order (the loop nests of the root's Seq).
inline std::vector<FoundBlock> Blocks(const ir::KernelFunction& function) {
  std::vector<FoundBlock> out;
  const ir::BlockNode* root = RootBlock(function);
  if (root == nullptr) return out;
  const auto* seq = ir::As<ir::SeqNode>(root->body);
  if (seq == nullptr) return out;
  for (const ir::Stmt& nest : seq->stmts) {
    FoundBlock found;
    ir::Stmt s = nest;
    while (const auto* loop = ir::As<ir::ForNode>(s)) {
      found.loops.push_back(loop);
      s = loop->body;
    }
    found.realize = ir::As<ir::BlockRealizeNode>(s);
    if (found.realize != nullptr) found.block = found.realize->block.get();
    out.push_back(found);
  }
  return out;
}

inline std::vector<std::string> BlockNames(const ir::KernelFunction& function) {
  std::vector<std::string> names;
  for (const FoundBlock& b : Blocks(function)) names.push_back(b.block ? b.block->name : "?");
  return names;
}

inline const FoundBlock* FindBlock(const std::vector<FoundBlock>& blocks, const std::string& name) {
  for (const FoundBlock& b : blocks) {
    if (b.block != nullptr && b.block->name == name) return &b;
  }
  return nullptr;
}

inline std::set<const ir::BufferNode*> LoadedBuffers(const ir::Expr& e) {
  std::set<const ir::BufferNode*> out;
  ir::VisitExprTree(e, [&](const ir::Expr& x) {
    if (x->kind == ir::ExprKind::kLoad) out.insert(x->buffer.get());
  });
  return out;
}

// Checks the shape of lowered IR described in kernels/compute/compute_builder.h.
inline void ExpectWellFormed(const ir::KernelFunction& function) {
  SCOPED_TRACE("kernel " + function.name);
  const ir::BlockNode* root = RootBlock(function);
  ASSERT_NE(root, nullptr) << "body is not a BlockRealize";
  EXPECT_EQ(root->name, "root");
  EXPECT_TRUE(root->iter_vars.empty());
  ASSERT_NE(ir::As<ir::SeqNode>(root->body), nullptr) << "root body is not a Seq";
  ASSERT_GE(function.num_outputs, 1);
  ASSERT_LE(static_cast<size_t>(function.num_outputs), function.params.size());

  std::set<const ir::BufferNode*> params, outputs, allocated, written;
  for (const ir::Buffer& b : function.params) params.insert(b.get());
  for (size_t i = function.params.size() - static_cast<size_t>(function.num_outputs);
       i < function.params.size(); ++i) {
    outputs.insert(function.params[i].get());
  }
  for (const ir::Buffer& b : root->alloc_buffers) {
    allocated.insert(b.get());
    EXPECT_EQ(b->scope, "global");
    EXPECT_EQ(params.count(b.get()), 0u) << b->name << " is both a parameter and allocated";
  }
  std::set<std::string> names;
  for (const FoundBlock& found : Blocks(function)) {
    ASSERT_NE(found.block, nullptr) << "a root statement is not a loop nest around a block";
    const ir::BlockNode& block = *found.block;
    SCOPED_TRACE("block " + block.name);
    EXPECT_TRUE(names.insert(block.name).second) << "duplicate block name";
    ASSERT_EQ(found.loops.size(), block.iter_vars.size());
    ASSERT_EQ(found.realize->iter_values.size(), block.iter_vars.size());
    bool reduction = false;
    for (size_t k = 0; k < block.iter_vars.size(); ++k) {
      const ir::IterVar& iv = block.iter_vars[k];
      EXPECT_TRUE(found.realize->iter_values[k].same_as(found.loops[k]->loop_var))
          << "iterator " << iv.var->name << " is not bound to its loop var";
      EXPECT_EQ(found.loops[k]->loop_var->name, iv.var->name);
      EXPECT_EQ(found.loops[k]->extent, iv.extent);
      EXPECT_EQ(found.loops[k]->for_kind, ir::ForKind::kSerial);
      EXPECT_FALSE(iv.var.same_as(found.loops[k]->loop_var));
      if (iv.kind == ir::IterKind::kReduction) reduction = true;
      if (reduction) {
        EXPECT_EQ(iv.kind, ir::IterKind::kReduction) << "a spatial iterator after a reduction one";
      }
    }
    const auto* store = ir::As<ir::StoreNode>(block.body);
    ASSERT_NE(store, nullptr) << "block body is not a Store";
    ASSERT_EQ(block.writes.size(), 1u);
    EXPECT_EQ(block.writes[0].buffer, store->buffer);
    EXPECT_TRUE(params.count(store->buffer.get()) == 0 || outputs.count(store->buffer.get()) != 0)
        << "a block writes input " << store->buffer->name;
    EXPECT_TRUE(outputs.count(store->buffer.get()) != 0 ||
                allocated.count(store->buffer.get()) != 0)
        << store->buffer->name << " is neither an output nor allocated by the root";
    written.insert(store->buffer.get());
    std::set<const ir::BufferNode*> loaded = LoadedBuffers(store->value);
    if (reduction) {
      const auto* init = ir::As<ir::StoreNode>(block.init);
      ASSERT_NE(init, nullptr) << "a reduction block without init";
      EXPECT_EQ(init->buffer, store->buffer);
      loaded.erase(store->buffer.get());
    } else {
      EXPECT_EQ(block.init, nullptr);
    }
    std::set<const ir::BufferNode*> read;
    for (const ir::BufferRegion& region : block.reads) {
      EXPECT_TRUE(read.insert(region.buffer.get()).second)
          << "two regions of " << region.buffer->name;
      EXPECT_EQ(region.region.size(), region.buffer->shape.size());
    }
    EXPECT_EQ(read, loaded) << "reads do not name the loaded buffers";
    for (const ir::BufferRegion& region : block.writes) {
      ASSERT_EQ(region.region.size(), region.buffer->shape.size());
      for (size_t k = 0; k < region.region.size(); ++k) {
        EXPECT_TRUE(region.region[k].min.same_as(block.iter_vars[k].var));
      }
    }
  }
  for (const ir::BufferNode* b : allocated) EXPECT_EQ(written.count(b), 1u) << b->name;
  for (const ir::BufferNode* b : outputs) EXPECT_EQ(written.count(b), 1u) << b->name;
}

// Element-wise comparison: relative error for floats, exact for integers.
inline void ExpectSameTensors(const std::vector<ir::Tensor>& actual,
                              const std::vector<ir::Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    ASSERT_EQ(actual[i].shape(), expected[i].shape());
    ASSERT_EQ(actual[i].dtype(), expected[i].dtype());
    if (ir::IsFloat(expected[i].dtype())) {
      EXPECT_LT(ir::RelativeError(actual[i], expected[i]), 1e-5);
    } else {
      EXPECT_EQ(ir::MaxAbsoluteError(actual[i], expected[i]), 0.0);
    }
  }
}

}  // namespace tandem::kernels::testing
