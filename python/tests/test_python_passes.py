"""Passes written in Python inside a nested pipeline: a heuristic pass (a rewrite through the
GraphBuilder, with an argument) and a tuning pass (it proposes layouts; Tandem evaluates them
through its eval passes, the builder, the runner and the database). The tuning pass's decision is
in the trace, and the trace replays to the tuned module exactly."""

import os

import pytest

import tandem

proposed = []  # modules the tuning pass was asked about
rewritten = []  # calls of the heuristic pass, with its argument


@tandem.register
class PyReluAsClip(tandem.Pass):
    """relu(x) -> clip(x, min=0, max=max): the same function with the default max."""

    summary = "Rewrite relu as clip (a pass written in Python)."
    required = ("InferType",)
    arguments = {"max": float("inf")}

    def run(self, module, max):
        rewritten.append(max)

        def rewrite(builder, node, inputs):
            if node.op != "relu":
                return None
            return builder.call("clip", inputs, {"min": 0.0, "max": max}, node.name)

        return tandem.rewrite_calls(module, rewrite)


@tandem.register
class PyTuneLayout(tandem.TuningPass):
    """Proposes leaving the layout, or NHWC; Tandem measures both."""

    summary = "Choose between the model's layout and NHWC (a tuning pass written in Python)."
    required = ("InferType",)

    def choices(self, module):
        proposed.append(module.hash)
        nhwc = tandem.parse_pipeline('ConvertLayout(layout="NHWC")')
        return {"keep": lambda m: m, "NHWC": lambda m: tandem.apply(m, nhwc)}


PIPELINE = ("InferType, FoldConstant, PyTuneLayout(eval=[FoldConstant, PyReluAsClip, FuseOps, "
            "TuneKernels(trials=2)]), DeadCodeElimination")


def count_ops(module, op):
    return sum(1 for n in module.function("main").nodes if n.kind == "call" and n.op == op)


@pytest.fixture(scope="module")
def tiny_cnn(paths):
    return tandem.import_onnx(os.path.join(paths.tiny_cnn, "model.onnx"))


def test_python_passes_are_registered_and_named_in_pipeline_text(tiny_cnn):
    pipeline = tandem.parse_pipeline(PIPELINE)
    assert pipeline.text == PIPELINE
    described = {p["name"]: p for p in tandem.passes()}
    assert described["PyTuneLayout"]["is_tuning"]
    assert described["PyReluAsClip"]["arguments"] == {"max": float("inf")}
    # The heuristic pass alone: relu gone, clip in, the same results as the reference.
    assert count_ops(tiny_cnn, "relu") > 0
    clipped = tandem.apply(tiny_cnn, tandem.parse_pipeline("InferType, PyReluAsClip(max=1e30)"))
    assert count_ops(clipped, "relu") == 0
    assert count_ops(clipped, "clip") == count_ops(tiny_cnn, "relu")
    assert rewritten[-1] == 1e30
    x = tandem.random_inputs(tiny_cnn, seed=3)
    assert tandem.relative_error(tandem.reference(clipped, x)[0],
                                 tandem.reference(tiny_cnn, x)[0]) < 1e-6
    with pytest.raises(tandem.Error, match="argument"):
        tandem.parse_pipeline('PyReluAsClip(max="high")')


def test_python_tuning_pass_decides_by_measurement_and_replays(paths, tiny_cnn, work_dir):
    db = os.path.join(work_dir, "python_passes.db")
    result = tandem.tune(tiny_cnn, pipeline=tandem.parse_pipeline(PIPELINE), db=db, trials=8,
                         threads=1, repeats=2, confirm_rounds=0)
    assert result.ok
    assert proposed, "the tuning pass was never asked for candidates"
    # Both candidates were evaluated (through the eval passes, which ran the Python pass).
    counts = result.run.counts
    tuning_pass = next(name for name in counts if name.startswith("PyTuneLayout"))
    assert counts[tuning_pass]["requested"] == 2
    assert rewritten.count(float("inf")) >= 2
    # The decision is in the trace.
    decided = [(index, i) for index, i in enumerate(result.trace.instructions)
               if i.kind.startswith("PyTuneLayout")]
    assert len(decided) == 1
    index, decision = decided[0][0], decided[0][1].decision
    assert decision in ("keep", "NHWC")
    # The tuned module has the Python pass's rewrite and computes what the model computes.
    assert count_ops(result.module, "relu") == 0
    data = os.path.join(paths.tiny_cnn, "test_data_set_0")
    out = tandem.build(result.module, threads=1).run(*tandem.read_tensors(data, "input"))
    assert tandem.relative_error(out[0], tandem.read_tensors(data, "output")[0]) < 1e-4
    # Replaying the trace measures nothing and gives the tuned module exactly; the other
    # decision replays to another module.
    assert tandem.replay(tiny_cnn, result.trace) == result.module
    other = "NHWC" if decision == "keep" else "keep"
    changed = tandem.replay(tiny_cnn, result.trace.with_decision(index, other))
    assert not changed == result.module
    stored = tandem.open_database(db).runs()[-1]
    assert stored.trace == result.trace


@tandem.register
class PyBroken(tandem.Pass):
    """Returns something that is not a module."""

    def run(self, module):
        return "not a module"


def test_errors_of_python_code_name_the_pass_and_stop_tuning(tiny_cnn):
    with pytest.raises(tandem.Error, match="pass PyBroken returned str, not a tandem.IRModule"):
        tandem.apply(tiny_cnn, tandem.parse_pipeline("PyBroken"))

    def stop(event):
        raise KeyboardInterrupt("stopped by the progress callback")

    with pytest.raises(tandem.Error, match="progress callback of tune: KeyboardInterrupt: stopped"):
        tandem.tune(tiny_cnn, tandem.parse_pipeline("InferType, PyTuneLayout(eval=[FuseOps])"),
                    trials=2, threads=1, repeats=1, confirm_rounds=0, progress=stop)
