#include "ir/trace.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/json_depth.h"

namespace tandem::ir {

using nlohmann::json;

namespace {

json FloatToJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double FloatFromJson(const json& j) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw Error(fmt::format("'{}' is not a number", s));
  }
  if (!j.is_number()) throw Error(fmt::format("expected a number but found {}", j.dump()));
  return j.get<double>();
}

}  // namespace

json AttrValueToJson(const AttrValue& value) {
  switch (KindOf(value)) {
    case AttrKind::kInt:
      return std::get<int64_t>(value);
    case AttrKind::kFloat:
      return json{{"f", FloatToJson(std::get<double>(value))}};
    case AttrKind::kString:
      return std::get<std::string>(value);
    case AttrKind::kInts:
      return std::get<std::vector<int64_t>>(value);
    case AttrKind::kFloats: {
      json list = json::array();
      for (double d : std::get<std::vector<double>>(value)) list.push_back(FloatToJson(d));
      return json{{"fs", list}};
    }
  }
  return nullptr;
}

AttrValue AttrValueFromJson(const json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    std::vector<int64_t> ints;
    for (const json& e : j) {
      if (!e.is_number_integer()) throw Error(fmt::format("int list holds {}", e.dump()));
      ints.push_back(e.get<int64_t>());
    }
    return ints;
  }
  if (j.is_object() && j.size() == 1 && j.contains("f")) return FloatFromJson(j.at("f"));
  if (j.is_object() && j.size() == 1 && j.contains("fs") && j.at("fs").is_array()) {
    std::vector<double> floats;
    for (const json& e : j.at("fs")) floats.push_back(FloatFromJson(e));
    return floats;
  }
  throw Error(fmt::format("{} is not an attribute value", j.dump()));
}

json AttrsToJson(const Attrs& attrs) {
  json out = json::object();
  for (const auto& [k, v] : attrs.values()) out[k] = AttrValueToJson(v);
  return out;
}

Attrs AttrsFromJson(const json& j) {
  if (!j.is_object()) throw Error(fmt::format("attributes must be an object, not {}", j.dump()));
  Attrs attrs;
  for (const auto& [k, v] : j.items()) {
    try {
      attrs.Set(k, AttrValueFromJson(v));
    } catch (const Error& e) {
      throw Error(fmt::format("attribute '{}': {}", k, e.message()));
    }
  }
  return attrs;
}

Trace Trace::WithDecision(size_t index, AttrValue decision) const {
  if (index >= instructions_.size()) {
    throw Error(
        fmt::format("trace has {} instructions; no instruction {}", instructions_.size(), index));
  }
  if (!instructions_[index].decision) {
    throw Error(
        fmt::format("instruction {} ({}) makes no decision", index, instructions_[index].kind));
  }
  Trace t = *this;
  t.instructions_[index].decision = std::move(decision);
  return t;
}

Trace Trace::Prefix(size_t count) const {
  Trace t;
  t.instructions_.assign(
      instructions_.begin(),
      instructions_.begin() + static_cast<std::ptrdiff_t>(std::min(count, instructions_.size())));
  return t;
}

namespace {

json InstructionsToJson(const std::vector<Instruction>& instructions) {
  json list = json::array();
  for (const Instruction& inst : instructions) {
    json j = json::object();
    j["kind"] = inst.kind;
    j["inputs"] = inst.inputs;
    j["attrs"] = AttrsToJson(inst.attrs);
    j["outputs"] = inst.outputs;
    if (inst.decision) j["decision"] = AttrValueToJson(*inst.decision);
    if (!inst.nested.empty()) {
      json nested = json::array();
      for (const NestedTrace& trace : inst.nested) {
        nested.push_back(
            json{{"label", trace.label}, {"instructions", InstructionsToJson(trace.instructions)}});
      }
      j["nested"] = std::move(nested);
    }
    list.push_back(std::move(j));
  }
  return list;
}

std::vector<Instruction> InstructionsFromJson(const json& list) {
  if (!list.is_array()) throw Error("\"instructions\" must be an array");
  std::vector<Instruction> instructions;
  size_t index = 0;
  for (const json& j : list) {
    try {
      if (!j.is_object()) throw Error("an instruction must be an object");
      Instruction inst;
      if (!j.contains("kind") || !j.at("kind").is_string())
        throw Error("missing string field \"kind\"");
      inst.kind = j.at("kind").get<std::string>();
      auto strings = [&](const char* field) {
        std::vector<std::string> out;
        if (!j.contains(field)) return out;
        if (!j.at(field).is_array())
          throw Error(fmt::format("field \"{}\" must be an array", field));
        for (const json& s : j.at(field)) {
          if (!s.is_string()) throw Error(fmt::format("field \"{}\" must hold strings", field));
          out.push_back(s.get<std::string>());
        }
        return out;
      };
      inst.inputs = strings("inputs");
      inst.outputs = strings("outputs");
      if (j.contains("attrs")) inst.attrs = AttrsFromJson(j.at("attrs"));
      if (j.contains("decision")) inst.decision = AttrValueFromJson(j.at("decision"));
      if (j.contains("nested")) {
        if (!j.at("nested").is_array()) throw Error("field \"nested\" must be an array");
        for (const json& nested : j.at("nested")) {
          if (!nested.is_object() || !nested.contains("label") || !nested.at("label").is_string() ||
              !nested.contains("instructions")) {
            throw Error("a nested trace must be an object with \"label\" and \"instructions\"");
          }
          std::string label = nested.at("label").get<std::string>();
          try {
            inst.nested.push_back({label, InstructionsFromJson(nested.at("instructions"))});
          } catch (const Error& e) {
            throw Error(fmt::format("nested trace '{}': {}", label, e.message()));
          }
        }
      }
      instructions.push_back(std::move(inst));
    } catch (const Error& e) {
      throw Error(fmt::format("trace instruction {}: {}", index, e.message()));
    }
    ++index;
  }
  return instructions;
}

void AppendText(const std::vector<Instruction>& instructions, const std::string& indent,
                std::string& out) {
  for (const Instruction& inst : instructions) {
    std::string line = indent;
    if (!inst.outputs.empty()) line += fmt::format("{} = ", fmt::join(inst.outputs, ", "));
    line += fmt::format("{}({})", inst.kind, fmt::join(inst.inputs, ", "));
    if (!inst.attrs.empty()) line += " " + ToString(inst.attrs);
    if (inst.decision) line += " decision=" + ToString(*inst.decision);
    out += line + "\n";
    for (const NestedTrace& nested : inst.nested) {
      out += indent + "  [" + nested.label + "]\n";
      AppendText(nested.instructions, indent + "    ", out);
    }
  }
}

}  // namespace

std::string Trace::ToJson() const {
  return json{{"version", 1}, {"instructions", InstructionsToJson(instructions_)}}.dump();
}

Trace Trace::FromJson(const std::string& text) {
  CheckJsonDepth(text);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("trace JSON does not parse: {}", e.what()));
  }
  if (!root.is_object() || !root.contains("instructions") || !root.at("instructions").is_array()) {
    throw Error("trace JSON must be an object with an \"instructions\" array");
  }
  if (root.contains("version") && root.at("version") != 1) {
    throw Error(fmt::format("trace JSON version {} is not supported (expected 1)",
                            root.at("version").dump()));
  }
  return Trace(InstructionsFromJson(root.at("instructions")));
}

std::string Trace::ToText() const {
  std::string out;
  AppendText(instructions_, "", out);
  return out;
}

}  // namespace tandem::ir
