#include "report/decision_tree_html.h"

#include "tuning/search/apply_history_best.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "report/html_text.h"

namespace tandem::report {

using tuning::Database;
using tuning::TuningRun;
using tuning::TuningDecision;
using tuning::Workload;
using tuning::CarriesSchedules;
using tuning::ScheduleDecision;

namespace {

constexpr const char* kApply = "apply";
constexpr size_t kInlineDecisionLength = 60;

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\n") - begin + 1);
}

// Splits `text` at the commas outside brackets and quotes.
std::vector<std::string> SplitTopLevel(const std::string& text) {
  std::vector<std::string> items;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      items.push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  items.push_back(Trim(text.substr(start)));
  return items;
}

// The text inside the brackets of the argument `eval=[...]` of one pass's text ("" when none).
std::string EvalArgument(const std::string& pass) {
  for (const std::string& argument :
       SplitTopLevel(pass.find('(') == std::string::npos
                         ? ""
                         : pass.substr(pass.find('(') + 1, pass.rfind(')') - pass.find('(') - 1))) {
    size_t equals = argument.find('=');
    if (equals == std::string::npos || Trim(argument.substr(0, equals)) != "eval") continue;
    std::string value = Trim(argument.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
      return value.substr(1, value.size() - 2);
    }
  }
  return "";
}

std::string DecisionString(const ir::Instruction& instruction) {
  if (!instruction.decision) return "";
  if (const auto* text = std::get_if<std::string>(&*instruction.decision)) return *text;
  return ir::ToString(*instruction.decision);
}

bool IsHeuristic(const ir::Instruction& instruction) {
  return DecisionString(instruction) == kApply;
}

struct TreeNode {
  const ir::Instruction* instruction;
  std::vector<TreeNode> children;
};

// Matches instructions from `cursor` against `passes` in order; a pass whose instruction is not
// next (a tuning pass that decided nothing) is skipped.
std::vector<TreeNode> Match(const std::vector<PipelineNode>& passes,
                            const std::vector<ir::Instruction>& instructions, size_t& cursor) {
  std::vector<TreeNode> nodes;
  for (const PipelineNode& pass : passes) {
    if (cursor >= instructions.size() || instructions[cursor].kind != pass.name) continue;
    TreeNode node{&instructions[cursor++], {}};
    node.children = Match(pass.eval, instructions, cursor);
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// Instructions the pipeline text did not account for: everything after a tuning instruction
// belongs to the candidate it chose, so it nests beneath it.
void NestRest(const std::vector<ir::Instruction>& instructions, size_t cursor,
              std::vector<TreeNode>& into) {
  for (; cursor < instructions.size(); ++cursor) {
    into.push_back({&instructions[cursor], {}});
    if (!IsHeuristic(instructions[cursor])) {
      NestRest(instructions, cursor + 1, into.back().children);
      return;
    }
  }
}

std::string KernelLabel(const Database* database, const std::string& hash) {
  std::optional<Workload> workload = database ? database->GetWorkload(hash) : std::nullopt;
  if (!workload) return "";
  const std::string& text = workload->text;
  if (text.rfind("kernel @", 0) == 0) return text.substr(7, text.find('(') - 7);
  return Shorten(text, 60);
}

// The kernel schedules an instruction carries: workload hash -> schedule trace.
std::string KernelScheduleList(const std::map<std::string, ir::Trace>& schedules,
                               const Database* database) {
  std::string html = "<ul>";
  for (const auto& [hash, trace] : schedules) {
    std::string detail = fmt::format("{} instruction{}</summary><pre>{}</pre>", trace.size(),
                                     trace.size() == 1 ? "" : "s", HtmlEscape(trace.ToText()));
    std::string label = KernelLabel(database, hash);
    html += fmt::format(
        "<li><details><summary><code>{}</code>{} &middot; {}</details></li>", HtmlEscape(hash),
        label.empty() ? "" : " <span class=\"kernel\">" + HtmlEscape(label) + "</span>", detail);
  }
  return html + "</ul>";
}

std::string NodeHtml(const TreeNode& node, const Database* database, const std::string& result,
                     int depth) {
  const ir::Instruction& instruction = *node.instruction;
  std::string pass_text = instruction.attrs.GetString("pass", instruction.kind);
  std::string name = fmt::format("<span class=\"pass\" title=\"{}\">{}</span>",
                                 HtmlEscape(pass_text), HtmlEscape(instruction.kind));
  std::string decision = DecisionString(instruction);
  if (decision == kApply && node.children.empty()) {
    return fmt::format("<li class=\"heuristic\">{} <span class=\"muted\">applied</span></li>",
                       name);
  }
  std::string summary = name, body;
  std::optional<std::map<std::string, ir::Trace>> kernels;
  if (CarriesSchedules(instruction)) {
    try {
      kernels = ScheduleDecision(instruction);
    } catch (const ir::Error& e) {
      body += "<pre>" + HtmlEscape(e.what()) + "</pre>";
    }
  }
  if (kernels) {
    summary +=
        fmt::format(": {} kernel{} scheduled", kernels->size(), kernels->size() == 1 ? "" : "s");
    if (!kernels->empty()) body += KernelScheduleList(*kernels, database);
  } else if (instruction.attrs.Has("choice")) {
    summary += " = <code class=\"decision\">" +
               HtmlEscape(instruction.attrs.GetString("choice", "")) + "</code>";
    body += "<details class=\"decision-text\"><summary>decision</summary><pre>" +
            HtmlEscape(decision) + "</pre></details>";
  } else if (decision.size() > kInlineDecisionLength || decision.find('\n') != std::string::npos) {
    summary += " = <code class=\"decision\">" +
               HtmlEscape(Shorten(decision, kInlineDecisionLength)) + "</code>";
    body += "<details class=\"decision-text\"><summary>decision</summary><pre>" +
            HtmlEscape(decision) + "</pre></details>";
  } else if (decision != kApply) {
    summary += " = <code class=\"decision\">" + HtmlEscape(decision) + "</code>";
  }
  std::string considered = instruction.attrs.GetString("considered", "");
  if (!considered.empty()) {
    std::string list = considered;
    for (size_t at = list.find(','); at != std::string::npos; at = list.find(',', at + 2)) {
      list.replace(at, 1, ", ");
    }
    summary += " <span class=\"muted\">of " + HtmlEscape(list) + "</span>";
  }
  for (const auto& [key, value] : instruction.attrs.values()) {
    if (key == "pass" || key == "considered" || key == "choice") continue;
    summary += fmt::format(" <span class=\"muted\">{}={}</span>", HtmlEscape(key),
                           HtmlEscape(Shorten(ir::ToString(value), 40)));
  }
  if (!result.empty()) summary += " <span class=\"result\">" + result + "</span>";
  if (!node.children.empty()) {
    body += "<ul>";
    for (const TreeNode& child : node.children) body += NodeHtml(child, database, "", depth + 1);
    body += "</ul>";
  }
  if (body.empty()) return "<li class=\"tuning\">" + summary + "</li>";
  return fmt::format("<li class=\"tuning\"><details{}><summary>{}</summary>{}</details></li>",
                     depth == 0 || !kernels ? " open" : "", summary, body);
}

}  // namespace

std::vector<PipelineNode> PipelineStructure(const std::string& text) {
  std::vector<PipelineNode> nodes;
  if (Trim(text).empty()) return nodes;
  for (const std::string& item : SplitTopLevel(text)) {
    if (item.empty()) continue;
    PipelineNode node;
    node.text = item;
    node.name = Trim(item.substr(0, item.find('(')));
    std::string eval = EvalArgument(item);
    if (!eval.empty()) node.eval = PipelineStructure(eval);
    nodes.push_back(std::move(node));
  }
  return nodes;
}

std::string DecisionTreeHtml(const TuningRun& run, const Database* database) {
  const std::vector<ir::Instruction>& instructions = run.trace.instructions();
  if (instructions.empty()) return "<p class=\"muted\">The pipeline trace is empty.</p>";
  size_t cursor = 0;
  std::vector<TreeNode> roots = Match(PipelineStructure(run.pipeline), instructions, cursor);
  NestRest(instructions, cursor, roots);
  // The winning latency of each top-level tuning pass, from the run's decisions (in order).
  size_t next_decision = 0;
  std::string html = "<ul class=\"tree\">";
  for (const TreeNode& root : roots) {
    std::string result;
    if (next_decision < run.decisions.size() && !run.decisions[next_decision].trace.empty() &&
        run.decisions[next_decision].trace.instructions().front() == *root.instruction) {
      const TuningDecision& decision = run.decisions[next_decision++];
      result = decision.result.ok() ? "best " + FormatDuration(decision.result.median_seconds)
               : decision.result.error.rfind("not measured", 0) == 0
                   ? "<span class=\"muted\">" + HtmlEscape(decision.result.error) + "</span>"
                   : "failed: " + HtmlEscape(Shorten(decision.result.error, 80));
      if (decision.baseline_seconds > 0) {
        result += " (input " + FormatDuration(decision.baseline_seconds) + ")";
      }
    }
    html += NodeHtml(root, database, result, 0);
  }
  return html + "</ul>";
}

}  // namespace tandem::report
