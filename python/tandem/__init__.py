"""Tandem from Python: import models, run and tune pipelines, build and run on NumPy arrays,
read tuning databases, benchmark against other engines, and write passes in Python.

Everything here calls the same C++ functions as the `tandem` program; a failure is a
``tandem.Error`` carrying Tandem's message. See docs/python.md.
"""

import os as _os
import sys as _sys

# The extension is loaded with its symbols global, so that a plugin loaded later
# (tandem.load_plugin) links against the Tandem code inside it, as it does against the
# `tandem` program.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from . import _tandem
finally:
    _sys.setdlopenflags(_flags)

from ._tandem import (  # noqa: E402,F401
    BoundExecutable,
    Database,
    Error,
    Executable,
    GraphBuilder,
    GraphFunction,
    Instruction,
    IRModule,
    Node,
    Pipeline,
    Trace,
    TuneResult,
    TuningRecord,
    TuningRun,
    apply,
    bench,
    build,
    compile,
    empty,
    import_onnx,
    load,
    load_plugin,
    op,
    open_database,
    ops,
    ops_text,
    parse,
    parse_pipeline,
    passes,
    passes_text,
    pipeline,
    pipelines,
    random_inputs,
    read_tensors,
    reference,
    register_pipelines,
    relative_error,
    replay,
    sequential,
    tune,
)

from ._passes import Pass, TuningPass, register, rewrite_calls  # noqa: E402,F401
