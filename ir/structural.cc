#include "ir/structural.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <set>

#include "ir/kernel/kernel_structural.h"

namespace tandem::ir {
namespace {

bool Valid(const GraphFunction& function, ValueId id) {
  return id >= 0 && static_cast<size_t>(id) < function.nodes.size();
}

// Number of distinct valid parameters: the first entries of CanonicalNodeOrder.
size_t NumCanonicalParams(const GraphFunction& function) {
  std::set<ValueId> seen;
  for (ValueId param : function.params) {
    if (Valid(function, param)) seen.insert(param);
  }
  return seen.size();
}

// Node index -> canonical position (-1 for an invalid id).
class Positions {
 public:
  explicit Positions(const GraphFunction& function)
      : order_(CanonicalNodeOrder(function)), position_(function.nodes.size(), -1) {
    for (size_t k = 0; k < order_.size(); ++k) {
      position_[static_cast<size_t>(order_[k])] = static_cast<int64_t>(k);
    }
  }
  const std::vector<ValueId>& order() const { return order_; }
  int64_t operator()(ValueId id) const {
    return id >= 0 && static_cast<size_t>(id) < position_.size()
               ? position_[static_cast<size_t>(id)]
               : -1;
  }

 private:
  std::vector<ValueId> order_;
  std::vector<int64_t> position_;
};

// Float bits as compared and hashed: every NaN is one NaN.
uint64_t CanonicalBits(double value) {
  if (std::isnan(value)) return 0x7ff8000000000000ULL;
  return std::bit_cast<uint64_t>(value);
}

bool AttrValueEqual(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<double>(&a))
    return CanonicalBits(*x) == CanonicalBits(std::get<double>(b));
  if (const auto* x = std::get_if<std::vector<double>>(&a)) {
    const auto& y = std::get<std::vector<double>>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i) {
      if (CanonicalBits((*x)[i]) != CanonicalBits(y[i])) return false;
    }
    return true;
  }
  return a == b;
}

std::string AttrsDiff(const char* what, const Attrs& a, const Attrs& b) {
  std::set<std::string> keys;
  for (const auto& [key, value] : a.values()) keys.insert(key);
  for (const auto& [key, value] : b.values()) keys.insert(key);
  for (const std::string& key : keys) {
    bool in_a = a.Has(key), in_b = b.Has(key);
    if (in_a && in_b && AttrValueEqual(a.values().at(key), b.values().at(key))) continue;
    return fmt::format("{} '{}': {} vs {}", what, key,
                       in_a ? ToString(a.values().at(key)) : "absent",
                       in_b ? ToString(b.values().at(key)) : "absent");
  }
  return "";
}

std::string ConstantDiff(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) {
    return fmt::format("constant data {} vs {}", a.defined() ? "present" : "missing",
                       b.defined() ? "present" : "missing");
  }
  if (!a.defined()) return "";
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return fmt::format("constant data of type {} vs {}", ToString(a.type()), ToString(b.type()));
  }
  auto x = a.bytes(), y = b.bytes();
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i]) return fmt::format("constant data differs first at byte {}", i);
  }
  return "";
}

std::string NodeDiff(const Node& a, const Positions& positions_a, const Node& b,
                     const Positions& positions_b) {
  if (a.kind != b.kind) return fmt::format("kind {} vs {}", ToString(a.kind), ToString(b.kind));
  if (a.op != b.op) return fmt::format("op {} vs {}", a.op, b.op);
  if (a.callee != b.callee) return fmt::format("callee @{} vs @{}", a.callee, b.callee);
  if (a.inputs.size() != b.inputs.size()) {
    return fmt::format("{} operands vs {}", a.inputs.size(), b.inputs.size());
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    int64_t x = positions_a(a.inputs[i]), y = positions_b(b.inputs[i]);
    if (x != y) return fmt::format("operand {} is node {} vs node {}", i, x, y);
  }
  if (std::string diff = AttrsDiff("attribute", a.attrs, b.attrs); !diff.empty()) return diff;
  if (!(a.type == b.type)) return fmt::format("type {} vs {}", ToString(a.type), ToString(b.type));
  if (std::string diff = AttrsDiff("annotation", a.annotations, b.annotations); !diff.empty()) {
    return diff;
  }
  if (a.kind == NodeKind::kConstant) return ConstantDiff(a.value, b.value);
  return "";
}

// The serialization behind StructuralHash: it feeds exactly the fields that StructuralDiff
// compares, in a fixed order, with text names (not enum values) for kinds and dtypes.
class StructureHasher {
 public:
  void Module(const IRModule& module) {
    hasher_.UpdateString("module");
    AttrMap(module.attrs());
    hasher_.UpdateU64(module.graph_functions().size());
    for (const auto& [name, function] : module.graph_functions()) Function(*function);
    hasher_.UpdateU64(module.kernel_functions().size());
    for (const auto& [name, kernel] : module.kernel_functions()) {
      hasher_.UpdateString(name);
      hasher_.UpdateU64(StructuralHash(*kernel));
    }
  }

  void Function(const GraphFunction& function) {
    Positions positions(function);
    hasher_.UpdateString("graph");
    hasher_.UpdateString(function.name);
    hasher_.UpdateU64(NumCanonicalParams(function));
    hasher_.UpdateU64(positions.order().size());
    for (ValueId id : positions.order()) NodeFields(function.node(id), positions);
    Int(positions(function.output));
    AttrMap(function.attrs);
  }

  uint64_t Digest() const { return hasher_.Digest(); }

 private:
  void Int(int64_t value) { hasher_.UpdateU64(static_cast<uint64_t>(value)); }

  void Value(const AttrValue& value) {
    hasher_.UpdateString(ToString(KindOf(value)));
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            Int(v);
          } else if constexpr (std::is_same_v<T, double>) {
            hasher_.UpdateU64(CanonicalBits(v));
          } else if constexpr (std::is_same_v<T, std::string>) {
            hasher_.UpdateString(v);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            hasher_.UpdateU64(v.size());
            for (int64_t x : v) Int(x);
          } else {
            hasher_.UpdateU64(v.size());
            for (double x : v) hasher_.UpdateU64(CanonicalBits(x));
          }
        },
        value);
  }

  void AttrMap(const Attrs& attrs) {
    hasher_.UpdateU64(attrs.values().size());
    for (const auto& [key, value] : attrs.values()) {
      hasher_.UpdateString(key);
      Value(value);
    }
  }

  void Dims(DataType dtype, const Shape& shape) {
    hasher_.UpdateString(ToString(dtype));
    hasher_.UpdateU64(shape.size());
    for (int64_t d : shape) Int(d);
  }

  void TypeFields(const Type& type) {
    if (type.is_tuple()) {
      hasher_.UpdateString("tuple");
      hasher_.UpdateU64(type.fields().size());
      for (const Type& field : type.fields()) TypeFields(field);
      return;
    }
    hasher_.UpdateString("tensor");
    Dims(type.tensor().dtype, type.tensor().shape);
    hasher_.UpdateString(type.tensor().layout);
  }

  void NodeFields(const Node& node, const Positions& positions) {
    hasher_.UpdateString(ToString(node.kind));
    hasher_.UpdateString(node.op);
    if (node.kind == NodeKind::kCallKernel || node.kind == NodeKind::kCallExtern) {
      hasher_.UpdateString(node.callee);
    }
    hasher_.UpdateU64(node.inputs.size());
    for (ValueId input : node.inputs) Int(positions(input));
    AttrMap(node.attrs);
    TypeFields(node.type);
    AttrMap(node.annotations);
    if (node.kind != NodeKind::kConstant) return;
    hasher_.UpdateU64(node.value.defined() ? 1 : 0);
    if (!node.value.defined()) return;
    Dims(node.value.dtype(), node.value.shape());
    hasher_.UpdateU64(node.value.bytes().size());
    hasher_.Update(node.value.bytes());
  }

  StableHasher hasher_;
};

}  // namespace

std::vector<ValueId> CanonicalNodeOrder(const GraphFunction& function) {
  std::vector<ValueId> order;
  std::vector<bool> placed(function.nodes.size(), false);
  for (ValueId param : function.params) {
    if (!Valid(function, param) || placed[static_cast<size_t>(param)]) continue;
    placed[static_cast<size_t>(param)] = true;
    order.push_back(param);
  }
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    if (!placed[i]) order.push_back(static_cast<ValueId>(i));
  }
  return order;
}

std::string StructuralDiff(const GraphFunction& a, const GraphFunction& b) {
  if (a.name != b.name) return fmt::format("function names differ: @{} vs @{}", a.name, b.name);
  size_t params_a = NumCanonicalParams(a), params_b = NumCanonicalParams(b);
  if (params_a != params_b) {
    return fmt::format("@{}: {} parameters vs {}", a.name, params_a, params_b);
  }
  Positions positions_a(a), positions_b(b);
  if (a.nodes.size() != b.nodes.size()) {
    return fmt::format("@{}: {} nodes vs {}", a.name, a.nodes.size(), b.nodes.size());
  }
  for (size_t k = 0; k < a.nodes.size(); ++k) {
    const Node& x = a.node(positions_a.order()[k]);
    const Node& y = b.node(positions_b.order()[k]);
    std::string diff = NodeDiff(x, positions_a, y, positions_b);
    if (!diff.empty()) {
      return fmt::format("@{}: node {} (%{} vs %{}): {}", a.name, k, x.name, y.name, diff);
    }
  }
  int64_t output_a = positions_a(a.output), output_b = positions_b(b.output);
  if (output_a != output_b) {
    return fmt::format("@{}: returns node {} vs node {}", a.name, output_a, output_b);
  }
  if (std::string diff = AttrsDiff("function attribute", a.attrs, b.attrs); !diff.empty()) {
    return fmt::format("@{}: {}", a.name, diff);
  }
  return "";
}

std::string StructuralDiff(const IRModule& a, const IRModule& b) {
  if (std::string diff = AttrsDiff("module attribute", a.attrs(), b.attrs()); !diff.empty()) {
    return diff;
  }
  for (const auto& [name, function] : a.graph_functions()) {
    if (!b.Has(name)) return fmt::format("function @{} is only in the first module", name);
  }
  for (const auto& [name, function] : b.graph_functions()) {
    if (!a.Has(name)) return fmt::format("function @{} is only in the second module", name);
  }
  for (const auto& [name, function] : a.graph_functions()) {
    std::string diff = StructuralDiff(*function, b.Get(name));
    if (!diff.empty()) return diff;
  }
  for (const auto& [name, kernel] : a.kernel_functions()) {
    if (!b.HasKernel(name)) return fmt::format("kernel @{} is only in the first module", name);
  }
  for (const auto& [name, kernel] : b.kernel_functions()) {
    if (!a.HasKernel(name)) return fmt::format("kernel @{} is only in the second module", name);
  }
  for (const auto& [name, kernel] : a.kernel_functions()) {
    std::string diff = StructuralDiff(*kernel, b.GetKernel(name));
    if (!diff.empty()) return fmt::format("kernel @{}: {}", name, diff);
  }
  return "";
}

bool StructuralEqual(const GraphFunction& a, const GraphFunction& b) {
  return StructuralDiff(a, b).empty();
}

bool StructuralEqual(const IRModule& a, const IRModule& b) {
  return StructuralDiff(a, b).empty();
}

uint64_t StructuralHash(const GraphFunction& function) {
  StructureHasher hasher;
  hasher.Function(function);
  return hasher.Digest();
}

uint64_t StructuralHash(const IRModule& module) {
  StructureHasher hasher;
  hasher.Module(module);
  return hasher.Digest();
}

std::string HashToHex(uint64_t hash) {
  return fmt::format("{:016x}", hash);
}

// ---- XXH64, written from the published algorithm description ----

namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

uint64_t Read64(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | p[i];
  return value;
}

uint64_t Read32(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 3; i >= 0; --i) value = value << 8 | p[i];
  return value;
}

uint64_t Round(uint64_t accumulator, uint64_t input) {
  accumulator += input * kPrime2;
  accumulator = std::rotl(accumulator, 31);
  return accumulator * kPrime1;
}

uint64_t MergeRound(uint64_t hash, uint64_t accumulator) {
  hash ^= Round(0, accumulator);
  return hash * kPrime1 + kPrime4;
}

}  // namespace

StableHasher::StableHasher(uint64_t seed)
    : accumulators_{seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1}, seed_(seed) {}

void StableHasher::ConsumeStripe(const uint8_t* stripe) {
  for (int lane = 0; lane < 4; ++lane) {
    accumulators_[lane] = Round(accumulators_[lane], Read64(stripe + 8 * lane));
  }
}

void StableHasher::Update(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  const uint8_t* data = bytes.data();
  size_t size = bytes.size();
  total_length_ += size;
  if (buffered_ > 0) {
    size_t take = std::min(size, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, data, take);
    buffered_ += take;
    data += take;
    size -= take;
    if (buffered_ < sizeof(buffer_)) return;
    ConsumeStripe(buffer_);
    buffered_ = 0;
  }
  while (size >= sizeof(buffer_)) {
    ConsumeStripe(data);
    data += sizeof(buffer_);
    size -= sizeof(buffer_);
  }
  if (size > 0) std::memcpy(buffer_, data, size);
  buffered_ = size;
}

void StableHasher::UpdateU64(uint64_t value) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
  Update(std::span<const uint8_t>(bytes, 8));
}

void StableHasher::UpdateString(std::string_view text) {
  UpdateU64(text.size());
  Update(text);
}

uint64_t StableHasher::Digest() const {
  uint64_t hash;
  if (total_length_ >= sizeof(buffer_)) {
    const uint64_t* v = accumulators_;
    hash = std::rotl(v[0], 1) + std::rotl(v[1], 7) + std::rotl(v[2], 12) + std::rotl(v[3], 18);
    for (int lane = 0; lane < 4; ++lane) hash = MergeRound(hash, v[lane]);
  } else {
    hash = seed_ + kPrime5;
  }
  hash += total_length_;
  const uint8_t* p = buffer_;
  size_t left = buffered_;
  while (left >= 8) {
    hash ^= Round(0, Read64(p));
    hash = std::rotl(hash, 27) * kPrime1 + kPrime4;
    p += 8;
    left -= 8;
  }
  if (left >= 4) {
    hash ^= Read32(p) * kPrime1;
    hash = std::rotl(hash, 23) * kPrime2 + kPrime3;
    p += 4;
    left -= 4;
  }
  while (left > 0) {
    hash ^= *p * kPrime5;
    hash = std::rotl(hash, 11) * kPrime1;
    ++p;
    --left;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

}  // namespace tandem::ir
