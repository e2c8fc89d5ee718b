// Typed attributes of op calls and annotations.
//
// An attribute value is one of: an integer, a float (double), a string, a list of integers or a
// list of floats. Attrs keeps its keys sorted so printing and hashing are deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tandem::ir {

enum class AttrKind { kInt, kFloat, kString, kInts, kFloats };

std::string ToString(AttrKind kind);

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>>;

AttrKind KindOf(const AttrValue& value);
// Text form of a value: 3, 1.5, "NCHW", [1,1], [0.5,2]. Floats print in shortest
// round-trip form and always carry a '.', 'e', "inf" or "nan" so they never read back as ints.
std::string ToString(const AttrValue& value);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}

  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  void Set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  void Erase(const std::string& name) { values_.erase(name); }

  // Typed getters: throw Error naming the attribute when it is missing or of another kind.
  // GetFloat also accepts an integer value; GetFloats also accepts a list of integers.
  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const std::vector<int64_t>& GetInts(const std::string& name) const;
  std::vector<double> GetFloats(const std::string& name) const;

  // Getters with a default for a missing attribute (a present value of the wrong kind still
  // throws).
  int64_t GetInt(const std::string& name, int64_t fallback) const;
  double GetFloat(const std::string& name, double fallback) const;
  std::string GetString(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> GetInts(const std::string& name, std::vector<int64_t> fallback) const;

  const std::map<std::string, AttrValue>& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  bool operator==(const Attrs& other) const = default;

 private:
  const AttrValue& Get(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

// "{a=1, b=[2,3]}" (empty string when there are no attributes).
std::string ToString(const Attrs& attrs);

}  // namespace tandem::ir
