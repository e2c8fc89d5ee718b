"""A shared model tuned from Python with `joint` under a small budget, run on NumPy input against
its stored outputs, and its tuning database read back: the run, its trace, the records."""

import os

import pytest

import tandem

MODEL = "bert_small"  # the smallest shared model (2 encoder layers)


@pytest.fixture(scope="module")
def model_dir(paths):
    folder = os.path.join(paths.shared_models, MODEL)
    if not os.path.exists(os.path.join(folder, "model.onnx")):
        pytest.skip(f"the shared model {MODEL} is not at {folder}")
    return folder


def test_tune_joint_run_on_numpy_and_read_the_database(model_dir, work_dir):
    model = tandem.import_onnx(os.path.join(model_dir, "model.onnx"))
    db = os.path.join(work_dir, "tune.db")
    events = []
    result = tandem.tune(model, pipeline="joint", db=db, trials=4, threads=1, repeats=2,
                         confirm_rounds=0, progress=events.append, name=MODEL)
    assert result.ok and not result.replayed
    # Progress came through the callback, pass by pass.
    assert events and {"pass", "done", "total", "measured"} <= set(events[0])
    assert any(e["pass"].startswith("BestOf") for e in events)
    assert result.run.pipeline == tandem.pipeline("joint").text
    assert 0 < sum(c["measured"] for c in result.run.counts.values()) <= 4

    # The tuned module, built and run on the stored NumPy input, gives the stored output.
    data = os.path.join(model_dir, "test_data_set_0")
    inputs = tandem.read_tensors(data, "input")
    expected = tandem.read_tensors(data, "output")
    outputs = tandem.build(result.module, threads=1).run(*inputs)
    assert outputs[0].shape == expected[0].shape
    assert tandem.relative_error(outputs[0], expected[0]) < 1e-3

    # The database holds the run (with the trace that replays to the tuned module) and records.
    database = tandem.open_database(db)
    runs = database.runs()
    assert len(runs) == 1 and runs[0].model == MODEL
    assert runs[0].trace == result.trace and len(runs[0].trace) > 0
    assert tandem.replay(model, runs[0].trace) == result.module
    graphs = [w for w in database.workloads() if w["kind"] == "graph"]
    assert graphs
    records = [r for w in graphs for r in database.records(w["hash"])]
    measured = [r for r in records if r.ok]
    assert measured and all(r.median_seconds > 0 for r in measured)
    assert all(isinstance(r.trace, tandem.Trace) for r in records)

    # The same call again replays the stored run instead of tuning.
    again = tandem.tune(model, pipeline="joint", db=db, trials=4, threads=1, repeats=2,
                        confirm_rounds=0, name=MODEL)
    assert again.replayed and again.module == result.module
