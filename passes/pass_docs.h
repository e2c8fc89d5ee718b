// The reference of the registered passes, derived from their declarations: plain text for
// `tandem pipelines --passes` and Markdown for docs/passes.md (regenerated with
// `tandem pipelines --passes-markdown > docs/passes.md`; a test fails when the file differs).
#pragma once

#include <string>

#include "passes/pass_registry.h"

namespace tandem::passes {

// Every pass of `registry` in name order: its name, kind (heuristic or tuning, whether it takes
// eval passes), required passes, summary, and its arguments with kinds, defaults and docs.
std::string PassRegistryText(const PassRegistry& registry);
// The same as a Markdown document (one section per pass, a table of its arguments). The output
// depends only on the registry, so it is stable from run to run.
std::string PassRegistryMarkdown(const PassRegistry& registry);

}  // namespace tandem::passes
