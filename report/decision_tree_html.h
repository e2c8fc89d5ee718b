// The decisions of a tuning run as a tree of HTML lists, for the tuning report.
//
// A run's pipeline trace is flat: one instruction per pass of the pipeline, where a tuning pass
// contributes its own instruction followed by those of the passes it nests (its eval passes,
// run on the candidate it chose). The pipeline text gives the nesting back: the instructions are
// matched, in order, against the pipeline's passes and their eval passes, so each nested
// instruction is drawn beneath the tuning pass whose candidate it belongs to. Folding uses
// <details>/<summary>, so the page needs no scripts.
#pragma once

#include <string>
#include <vector>

#include "tuning/database/database.h"
#include "tuning/session/tuning_run.h"

namespace tandem::report {

// The structure of pipeline text: each pass's name, its whole text and its eval passes.
struct PipelineNode {
  std::string name;  // "TuneLayout"
  std::string text;  // "TuneLayout(eval=[FoldConstant, FuseOps])"
  std::vector<PipelineNode> eval;
};
// Splits pipeline text (see passes/pipeline_text.h) into its top-level passes, without the pass
// registry: only names, brackets and quotes are looked at. Malformed text gives what could be
// read (the tree then falls back to nesting every instruction after a tuning instruction).
std::vector<PipelineNode> PipelineStructure(const std::string& text);

// A <ul class="tree"> of the run's pipeline trace. Heuristic passes show as applied; a tuning
// pass shows its decision (a kernel search as "N kernels scheduled" with one folded entry per
// kernel: its workload, the schedule trace's length and text), the top-level ones with the
// winning candidate's latency. `database` (may be null) names the kernels' workloads.
std::string DecisionTreeHtml(const tuning::TuningRun& run, const tuning::Database* database);

}  // namespace tandem::report
