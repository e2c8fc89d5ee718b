// Trace: JSON round trip (nested traces included), readable text, and clear errors on malformed
// JSON.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/trace.h"

namespace tandem::ir {
namespace {

Trace KernelSchedule(int64_t factor) {
  Instruction split;
  split.kind = "split";
  split.inputs = {"l0"};
  split.outputs = {"l1", "l2"};
  split.attrs.Set("factors", std::vector<int64_t>{-1, factor});
  split.decision = AttrValue(std::vector<int64_t>{4, factor});
  return Trace({split});
}

// A graph-level trace whose TuneKernels step carries one kernel schedule per workload.
Trace GraphTrace() {
  Instruction layout;
  layout.kind = "TuneLayout";
  layout.attrs.Set("pass", std::string("TuneLayout"));
  layout.decision = AttrValue(std::string("NHWC"));
  Instruction kernels;
  kernels.kind = "TuneKernels";
  kernels.attrs.Set("pass", std::string("TuneKernels(trials=8)"));
  kernels.attrs.Set("weight", 0.5);
  kernels.decision = AttrValue(std::string("2 kernel schedules"));
  kernels.nested.push_back({"00aa", KernelSchedule(8).instructions()});
  kernels.nested.push_back({"00bb", KernelSchedule(16).instructions()});
  return Trace({layout, kernels});
}

TEST(Trace, NestedTracesRoundTripThroughJson) {
  Trace trace = GraphTrace();
  Trace back = Trace::FromJson(trace.ToJson());
  EXPECT_EQ(back, trace);
  EXPECT_EQ(back.ToJson(), trace.ToJson());
  ASSERT_EQ(back.instructions()[1].nested.size(), 2u);
  EXPECT_EQ(back.instructions()[1].nested[1].label, "00bb");
  // A float attribute stays a float, an int list an int list.
  EXPECT_TRUE(std::holds_alternative<double>(back.instructions()[1].attrs.values().at("weight")));
  // Instructions without nested traces write no "nested" field (older readers are unaffected).
  EXPECT_EQ(Trace({GraphTrace().instructions()[0]}).ToJson().find("nested"), std::string::npos);
}

TEST(Trace, NestedTracesDifferInEquality) {
  Trace a = GraphTrace();
  Trace b = GraphTrace();
  b.mutable_instructions()[1].nested[0].instructions = KernelSchedule(32).instructions();
  EXPECT_NE(a, b);
  EXPECT_NE(a.ToJson(), b.ToJson());
}

TEST(Trace, TextShowsNestedTracesIndentedUnderTheirLabel) {
  std::string text = GraphTrace().ToText();
  EXPECT_NE(text.find("TuneKernels() "), std::string::npos) << text;
  EXPECT_NE(text.find("\n  [00aa]\n    l1, l2 = split(l0) "), std::string::npos) << text;
  EXPECT_NE(text.find("\n  [00bb]\n"), std::string::npos) << text;
}

TEST(Trace, MalformedNestedTraceNamesWhere) {
  std::string json = GraphTrace().ToJson();
  std::string broken = json;
  broken.replace(broken.find("\"label\":\"00bb\""), std::string("\"label\":\"00bb\"").size(),
                 "\"label\":7");
  try {
    Trace::FromJson(broken);
    FAIL() << "a nested trace without a string label was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trace instruction 1"), std::string::npos) << e.what();
  }
  std::string bad_kind = json;
  bad_kind.replace(bad_kind.find("\"kind\":\"split\""), std::string("\"kind\":\"split\"").size(),
                   "\"kind\":3");
  try {
    Trace::FromJson(bad_kind);
    FAIL() << "a nested instruction without a kind was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested trace '00aa'"), std::string::npos) << e.what();
  }
}

// Converting or printing a parsed JSON value recurses per level: deep nesting is rejected
// before parsing, naming the limit and where it is passed.
TEST(Trace, DeeplyNestedJsonIsAClearError) {
  const std::string head = R"({"instructions":[{"kind":"k","attrs":{"a":)";
  std::string deep = head + std::string(100000, '[') + std::string(100000, ']') + "}}]}";
  try {
    Trace::FromJson(deep);
    FAIL() << "deeply nested JSON was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("JSON nested deeper than 256 levels"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.where().line, 1);
    EXPECT_EQ(e.where().column, static_cast<int>(head.size()) + 253);  // 4 levels open before
  }
  // Brackets inside strings do not count.
  std::string quoted = R"({"instructions":[{"kind":")" + std::string(1000, '[') + R"("}]})";
  EXPECT_EQ(Trace::FromJson(quoted).instructions().size(), 1u);
}

}  // namespace
}  // namespace tandem::ir
