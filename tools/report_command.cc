// `tandem report`: one self-contained HTML page of what a tuning database holds: the tuning runs
// with their latency before and after, their tuning curves, decision trees and evaluation
// counts, and the kernel workloads' best-so-far curves.
//   tandem report --db FILE [--output report.html] [--model NAME] [--kernels N]
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "ir/error.h"
#include "pipelines/pipeline_registry.h"
#include "report/tuning_report.h"
#include "tools/commands.h"

namespace tandem::tools {

namespace {

struct ReportCommandOptions {
  std::string database;
  std::string output = "report.html";
  report::ReportOptions report;
};

int RunReport(ReportCommandOptions& options) {
  std::unique_ptr<tuning::Database> database = OpenExistingDatabase(options.database);
  options.report.source = options.database;
  for (const pipelines::PipelineDef& pipeline : pipelines::PipelineRegistry::Global().List()) {
    options.report.pipeline_names.emplace(pipeline.text, pipeline.name);
  }
  std::string html = report::TuningReportHtml(*database, options.report);
  std::ofstream out(options.output, std::ios::binary);
  out << html;
  out.close();
  if (!out) throw ir::Error("cannot write the report", {.file = options.output});
  std::cerr << fmt::format("wrote {} ({} bytes)\n", options.output, html.size());
  return 0;
}

}  // namespace

Command AddReportCommand(CLI::App& app) {
  auto options = std::make_shared<ReportCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "write an HTML page of a tuning database: runs, latencies, curves, decisions");
  cmd->add_option("--db", options->database, "the tuning database file")->required();
  cmd->add_option("--output,-o", options->output, "the HTML file to write")->capture_default_str();
  cmd->add_option("--model", options->report.model,
                  "only this model's runs and the kernels they scheduled");
  cmd->add_option("--kernels", options->report.max_kernel_charts,
                  "kernel workloads charted (those with the most records)")
      ->capture_default_str();
  return [cmd, options] {
    if (!*cmd) return -1;
    return RunReport(*options);
  };
}

}  // namespace tandem::tools
