#include "passes/pass.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/pipeline_text.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

using ir::Error;

namespace {
const ir::AttrValue* FindArgument(const PassArguments& arguments, const std::string& key) {
  for (const auto& [k, v] : arguments) {
    if (k == key) return &v;
  }
  return nullptr;
}
}  // namespace

int64_t Pass::IntArgument(const std::string& key, int64_t fallback) const {
  const ir::AttrValue* v = FindArgument(arguments_, key);
  if (!v) return fallback;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  throw Error(
      fmt::format("{}: argument '{}' must be an integer, not {}", name(), key, ir::ToString(*v)));
}

double Pass::FloatArgument(const std::string& key, double fallback) const {
  const ir::AttrValue* v = FindArgument(arguments_, key);
  if (!v) return fallback;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  throw Error(
      fmt::format("{}: argument '{}' must be a number, not {}", name(), key, ir::ToString(*v)));
}

std::string Pass::StringArgument(const std::string& key, const std::string& fallback) const {
  const ir::AttrValue* v = FindArgument(arguments_, key);
  if (!v) return fallback;
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  throw Error(
      fmt::format("{}: argument '{}' must be a string, not {}", name(), key, ir::ToString(*v)));
}

void Pass::Validate(const std::vector<std::string>& preceding) const {
  for (const std::string& required : info().required) {
    if (std::find(preceding.begin(), preceding.end(), required) == preceding.end()) {
      throw Error(fmt::format("pass '{}' requires pass '{}' to run before it, but '{}' does not "
                              "run earlier in the pipeline",
                              name(), required, required),
                  ir::ErrorLocation{.pass = name()});
    }
  }
  // Nested (eval) passes run on this pass's output: this pass and what preceded it ran before.
  std::vector<PassPtr> inner = nested();
  if (!inner.empty()) {
    std::vector<std::string> before = preceding;
    before.push_back(name());
    Sequential(inner).Validate(before);
  }
}

const PassInfo& Sequential::info() const {
  static const PassInfo info{"Sequential", {}, false};
  return info;
}

void Sequential::Validate(const std::vector<std::string>& preceding) const {
  std::vector<std::string> before = preceding;
  for (const PassPtr& p : passes_) {
    p->Validate(before);
    before.push_back(p->name());
  }
}

ir::IRModule Sequential::Run(const ir::IRModule& module, PassContext& context) const {
  ir::IRModule current = module;
  for (const PassPtr& p : passes_) current = context.RunPass(*p, current);
  return current;
}

PassPtr MakeSequential(std::vector<PassPtr> passes) {
  return std::make_shared<Sequential>(std::move(passes));
}

namespace {

// Writes the reproducer of a failing pass and returns its path ("" when it could not be
// written; the original error is reported either way).
std::string WriteReproducer(const std::string& dir, const Pass& pass, const ir::IRModule& input,
                            const std::string& message) {
  try {
    std::filesystem::create_directories(dir);
    std::string stem = fmt::format("tandem_reproducer_{}_{}", pass.name(),
                                   std::chrono::steady_clock::now().time_since_epoch().count());
    std::filesystem::path ir_path = std::filesystem::path(dir) / (stem + ".tir");
    std::ofstream out(ir_path);
    out << "// Tandem crash reproducer\n";
    out << "// error: " << message << "\n";
    out << "// pipeline: " << PrintPipeline(pass) << "\n";
    out << "// reproduce: tandem compile " << ir_path.string() << " --pipeline-text '"
        << PrintPipeline(pass) << "'\n";
    out << ir::PrintModule(input);
    if (!out) return "";
    return ir_path.string();
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

ir::IRModule PassContext::RunPass(const Pass& pass, const ir::IRModule& module) {
  // Depth counts the non-group passes enclosing this one (0 for a pass of the outermost
  // pipeline, 1 for an eval pass of a top-level tuning pass, ...).
  bool is_group = pass.IsGroup();
  if (!is_group) ++depth_;
  struct DepthGuard {
    int& depth;
    bool active;
    ~DepthGuard() {
      if (active) --depth;
    }
  } guard{depth_, !is_group};
  if (!is_group) {
    for (const auto& instrument : instruments) instrument->BeforePass(pass, module, depth_);
  }
  auto start = std::chrono::steady_clock::now();
  ir::IRModule result;
  try {
    result = pass.Run(module, *this);
    if (verify_each && !is_group) {
      try {
        ir::Verify(result);
      } catch (const Error& e) {
        throw Error(
            fmt::format("pass '{}' broke an IR invariant: {}", pass.name(), e.message()),
            ir::ErrorLocation{.pass = pass.name(), .op = e.where().op, .node = e.where().node});
      }
    }
  } catch (const Error& e) {
    if (is_group || !e.where().pass.empty()) throw;  // reported by the innermost failing pass
    std::string message = e.message();
    if (!reproducer_dir.empty()) {
      std::string path = WriteReproducer(reproducer_dir, pass, module, e.what());
      if (!path.empty()) message += fmt::format(" [reproducer: {}]", path);
    }
    ir::ErrorLocation where = e.where();
    where.pass = pass.name();
    throw Error(message, where);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!is_group) preceding_.push_back(pass.name());
  if (!is_group) {
    for (const auto& instrument : instruments) {
      instrument->AfterPass(pass, module, result, seconds, depth_);
    }
  }
  return result;
}

ir::IRModule PassContext::RunPipeline(const Pass& pipeline, const ir::IRModule& module) {
  // A top-level run starts from nothing; a nested run (a tuning pass evaluating a candidate)
  // sees the passes that ran before it, and what it runs does not count for the outer pipeline.
  std::vector<std::string> saved = preceding_;
  if (depth_ < 0) preceding_.clear();  // depth_ is -1 outside any pass
  struct Restore {
    std::vector<std::string>& preceding;
    std::vector<std::string> saved;
    bool nested;
    ~Restore() {
      if (nested) preceding = std::move(saved);
    }
  } restore{preceding_, saved, depth_ >= 0};
  pipeline.Validate(preceding_);
  return RunPass(pipeline, module);
}

tuning::TuningSession& PassContext::Tuning() {
  if (!tuning) tuning = tuning::TuningSession::MakeDefault(target, seed);
  return *tuning;
}

}  // namespace tandem::passes
