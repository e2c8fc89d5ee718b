#include "ir/attrs.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/error.h"

namespace tandem::ir {

std::string ToString(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kString: return "string";
    case AttrKind::kInts: return "int list";
    case AttrKind::kFloats: return "float list";
  }
  return "?";
}

AttrKind KindOf(const AttrValue& value) { return static_cast<AttrKind>(value.index()); }

namespace {

std::string FloatText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);  // shortest representation that round-trips
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string QuoteString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string ToString(const AttrValue& value) {
  switch (KindOf(value)) {
    case AttrKind::kInt: return std::to_string(std::get<int64_t>(value));
    case AttrKind::kFloat: return FloatText(std::get<double>(value));
    case AttrKind::kString: return QuoteString(std::get<std::string>(value));
    case AttrKind::kInts: return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(value), ","));
    case AttrKind::kFloats: {
      std::vector<std::string> parts;
      for (double d : std::get<std::vector<double>>(value)) parts.push_back(FloatText(d));
      // An empty float list prints as "[.]" so it is not mistaken for an empty int list.
      if (parts.empty()) return "[.]";
      return fmt::format("[{}]", fmt::join(parts, ","));
    }
  }
  return "?";
}

const AttrValue& Attrs::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error(fmt::format("missing attribute '{}'", name));
  return it->second;
}

namespace {
[[noreturn]] void WrongKind(const std::string& name, AttrKind expected, const AttrValue& v) {
  throw Error(fmt::format("attribute '{}' must be {} but is {} {}", name, ToString(expected),
                          ToString(KindOf(v)), ToString(v)));
}
}  // namespace

int64_t Attrs::GetInt(const std::string& name) const {
  const AttrValue& v = Get(name);
  if (auto* p = std::get_if<int64_t>(&v)) return *p;
  WrongKind(name, AttrKind::kInt, v);
}

double Attrs::GetFloat(const std::string& name) const {
  const AttrValue& v = Get(name);
  if (auto* p = std::get_if<double>(&v)) return *p;
  if (auto* p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  WrongKind(name, AttrKind::kFloat, v);
}

const std::string& Attrs::GetString(const std::string& name) const {
  const AttrValue& v = Get(name);
  if (auto* p = std::get_if<std::string>(&v)) return *p;
  WrongKind(name, AttrKind::kString, v);
}

const std::vector<int64_t>& Attrs::GetInts(const std::string& name) const {
  const AttrValue& v = Get(name);
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  WrongKind(name, AttrKind::kInts, v);
}

std::vector<double> Attrs::GetFloats(const std::string& name) const {
  const AttrValue& v = Get(name);
  if (auto* p = std::get_if<std::vector<double>>(&v)) return *p;
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return {p->begin(), p->end()};
  WrongKind(name, AttrKind::kFloats, v);
}

int64_t Attrs::GetInt(const std::string& name, int64_t fallback) const {
  return Has(name) ? GetInt(name) : fallback;
}
double Attrs::GetFloat(const std::string& name, double fallback) const {
  return Has(name) ? GetFloat(name) : fallback;
}
std::string Attrs::GetString(const std::string& name, const std::string& fallback) const {
  return Has(name) ? GetString(name) : fallback;
}
std::vector<int64_t> Attrs::GetInts(const std::string& name,
                                    std::vector<int64_t> fallback) const {
  return Has(name) ? GetInts(name) : fallback;
}

std::string ToString(const Attrs& attrs) {
  if (attrs.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [k, v] : attrs.values()) parts.push_back(k + "=" + ToString(v));
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

}  // namespace tandem::ir
