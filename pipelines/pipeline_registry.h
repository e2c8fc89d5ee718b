// The registry of named pass pipelines.
//
// A pipeline is a name, a description and pipeline text (passes/pipeline_text.h), optionally
// for one target kind: Get(name, target) returns the variant registered for the target's kind
// when there is one (e.g. a CUDA pipeline that differs from the CPU one, as the seed's
// acc1_seq/acc2_seq), else the generic one. Users register pipelines from C++ or load them from
// a text file:
//
//   # my pipelines
//   [fast_cpu]
//   description = heuristic passes without layout changes
//   passes = InferType, FoldConstant, FuseOps, Legalize
//
//   [fast_cpu@cuda]
//   description = ...
//   passes = ...
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/target.h"
#include "passes/pass.h"

namespace tandem::pipelines {

struct PipelineDef {
  std::string name;
  std::string description;
  std::string text;         // pipeline text
  std::string target_kind;  // "" for every target
};

class PipelineRegistry {
 public:
  // The registry holding the built-in pipelines (built on first use).
  static PipelineRegistry& Global();

  // Adds a pipeline; its text is parsed at once (Error on an unknown pass or bad argument,
  // naming the pipeline). Registering a (name, target kind) twice is an Error.
  void Register(PipelineDef def);
  // Loads pipelines from a file in the format above; errors name the file and line.
  void LoadFile(const std::string& path);
  void LoadText(const std::string& text, const std::string& source_name);

  // The pipeline for the target (its kind's variant if any, else the generic one); Error listing
  // the known pipelines when there is none.
  const PipelineDef& Get(const std::string& name, const ir::Target& target = {}) const;
  passes::PassPtr Create(const std::string& name, const ir::Target& target = {}) const;
  std::vector<PipelineDef> List() const;

 private:
  std::map<std::pair<std::string, std::string>, PipelineDef> pipelines_;
};

void RegisterBuiltinPipelines(PipelineRegistry& registry);

// `text` (pipeline text) without its last top-level pass, which must be Legalize: the
// graph-level part of a pipeline, what a dynamic build runs before it lowers the kernels itself
// (backends/runtime/dynamic_executable.h). Error naming the last pass otherwise (a pipeline that
// tunes kernels or places ops on a backend takes decisions for one size).
std::string WithoutFinalLegalize(const std::string& text);

// `text` split at its last top-level comma: the passes before the last one, and the last one
// (trimmed; the first part is "" for a single pass).
std::pair<std::string, std::string> SplitLastPass(const std::string& text);

// Whether `pass_text` (one pass of pipeline text, trimmed) is the pass `name`, with or without
// arguments: "Legalize" and "Legalize(default_schedule=0)" are Legalize, "LegalizeX" is not.
bool IsPass(const std::string& pass_text, const std::string& name);

}  // namespace tandem::pipelines
