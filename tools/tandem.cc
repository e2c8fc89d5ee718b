// The `tandem` command-line program: inspect models and pipelines, compile, run and check.
// User errors (bad files, bad IR, unknown passes, shape mismatches) print a message naming what
// is wrong and exit with status 1; they never abort the process.
#include <CLI/CLI.hpp>

#include <iostream>

#include "ir/error.h"
#include "plugins/plugin.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  using namespace tandem::tools;
  CLI::App app{
      "tandem: tunes graph-level and kernel-level decisions of deep-learning models jointly"};
  app.require_subcommand(1);
  std::vector<std::string> plugins;
  app.add_option("--load-plugin", plugins,
                 "load a plugin (a shared library registering passes, schedule rules, mutators, "
                 "external backends or pipelines) before the command runs; repeatable, and "
                 "accepted after the command's name too");
  app.fallthrough();  // --load-plugin after the subcommand's name
  std::vector<Command> commands = {
      AddShowCommand(app),    AddInterpretCommand(app), AddPipelinesCommand(app),
      AddCompileCommand(app), AddRunCommand(app),       AddTuneCommand(app),
      AddDbCommand(app),      AddBenchCommand(app),     AddFixtureCommand(app),
      AddReportCommand(app),  AddExportCommand(app),    AddOpsCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const std::string& plugin : plugins) tandem::plugins::LoadPlugin(plugin);
    for (const Command& command : commands) {
      int status = command();
      if (status >= 0) return status;
    }
  } catch (const tandem::ir::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
