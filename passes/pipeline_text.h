// The text syntax of pass pipelines.
//
//   pipeline := pass (',' pass)*
//   pass     := Name [ '(' argument (',' argument)* ')' ]
//   argument := key '=' value | 'eval' '=' '[' pipeline ']'
//   value    := integer | float | "string" | true | false | [integer, ...]
//
// Example: `InferType, FoldConstant, TuneLayout(eval=[TuneKernels(trials=64)]), Legalize`.
// Printing is canonical (", " between items, arguments in the order given, eval last), so
// PrintPipeline(ParsePipeline(s)) == s for any canonical s; whitespace is free when parsing.
// Errors name the column and what was expected, or the unknown pass / bad argument.
// eval=[...] nests at most 64 deep and lists do not nest, so parsing never exhausts the stack.
#pragma once

#include <string>

#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace tandem::passes {

// Parses a pipeline into a Sequential of registered passes.
PassPtr ParsePipeline(const std::string& text,
                      const PassRegistry& registry = PassRegistry::Global());
// One line: the canonical text of a pass or pipeline (a Sequential prints its members).
std::string PrintPipeline(const Pass& pass);
// Several lines, one pass per line, nested passes indented under their tuning pass.
std::string PrintPipelineTree(const Pass& pass);

}  // namespace tandem::passes
