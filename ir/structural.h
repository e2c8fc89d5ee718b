// Structural equality and a stable structural hash of graph functions and modules.
//
// Two functions are structurally equal when they compute the same thing in the same shape:
// equal function names, parameter count, order and types, and node by node (in canonical node
// order) equal kinds, ops, call_kernel callees, operands (by position), attributes, types
// including layouts, annotations, constant data (bytewise), returned value and function
// attributes. Modules also compare their attributes and their kernel functions (with the kernel
// equality of ir/kernel/kernel_structural.h). Local value names are ignored. Float attributes
// compare by bit pattern (0.0 differs from -0.0), except that every NaN equals every NaN, since
// the text form prints them all as `nan`. The layout tag of a constant's Tensor is ignored (the
// node's type carries the layout).
//
// StructuralHash is a function of exactly what StructuralEqual compares (equal => equal hash) and
// is stable across processes, machines and compiler versions: it is the 64-bit xxHash (XXH64,
// seed 0, written out in structural.cc) of a fixed binary serialization, with constant bytes
// streamed into the hash as they are. It is what the tuning database keys workloads by.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace tandem::ir {

// The order in which the printer emits nodes and structural equality matches them: the
// parameters in call order, then every other node in its order in `function.nodes`.
std::vector<ValueId> CanonicalNodeOrder(const GraphFunction& function);

bool StructuralEqual(const GraphFunction& a, const GraphFunction& b);
bool StructuralEqual(const IRModule& a, const IRModule& b);
// Human-readable first difference ("" when structurally equal), for test failure messages.
std::string StructuralDiff(const GraphFunction& a, const GraphFunction& b);
std::string StructuralDiff(const IRModule& a, const IRModule& b);

uint64_t StructuralHash(const GraphFunction& function);
uint64_t StructuralHash(const IRModule& module);
// 16 lower-case hex digits.
std::string HashToHex(uint64_t hash);

// Streaming XXH64 (seed 0 unless given). Multi-byte values are fed in little-endian order on
// every machine, so digests are portable. Use it to hash other IR (kernels, traces) the same way.
class StableHasher {
 public:
  explicit StableHasher(uint64_t seed = 0);
  void Update(std::span<const uint8_t> bytes);
  void Update(std::string_view text) {
    Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  void UpdateU64(uint64_t value);
  // The length, then the bytes (so consecutive strings cannot run together).
  void UpdateString(std::string_view text);
  // The digest of everything fed so far (the hasher can keep going afterwards).
  uint64_t Digest() const;

 private:
  void ConsumeStripe(const uint8_t* stripe);
  uint64_t accumulators_[4];
  uint8_t buffer_[32];
  size_t buffered_ = 0;
  uint64_t total_length_ = 0;
  uint64_t seed_;
};

}  // namespace tandem::ir
