// The Python module's Pipeline: a pass or a pipeline of passes (passes::PassPtr).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "passes/pass.h"

namespace tandem::python {

struct Pipeline {
  passes::PassPtr pass;
};

// A tandem.Pipeline, or a registered pipeline's name (its variant for `target`).
passes::PassPtr ToPass(const pybind11::object& pipeline, const std::string& target);

// The context of the pass being run through Python code right now (a Python pass's `run` or a
// Python tuning pass's choice), or null: tandem.apply runs nested passes through it.
passes::PassContext* CurrentPassContext();

}  // namespace tandem::python
