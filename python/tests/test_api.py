"""The Python API on the bundled tiny_cnn model: import, text form, pipelines, errors, building
and running on NumPy arrays against the stored outputs, zero-copy, the operator catalog, bench."""

import os

import numpy as np
import pytest

import tandem


@pytest.fixture(scope="module")
def tiny_cnn(paths):
    return tandem.import_onnx(os.path.join(paths.tiny_cnn, "model.onnx"))


def stored(paths, name):
    data = os.path.join(paths.tiny_cnn, "test_data_set_0")
    return tandem.read_tensors(data, name)


def test_import_from_path_bytes_and_model_proto(paths, tiny_cnn):
    path = os.path.join(paths.tiny_cnn, "model.onnx")
    with open(path, "rb") as f:
        from_bytes = tandem.import_onnx(f.read())
    assert from_bytes == tiny_cnn
    assert from_bytes.hash == tiny_cnn.hash
    onnx = pytest.importorskip("onnx")
    if not hasattr(onnx, "load"):  # libonnx-testdata's data directory, not the package
        pytest.skip("the onnx Python package is not installed")
    assert tandem.import_onnx(onnx.load(path)) == tiny_cnn


def test_text_round_trip_and_graph_view(tiny_cnn):
    text = tiny_cnn.text()
    parsed = tandem.parse(text)
    assert parsed == tiny_cnn and parsed.hash == tiny_cnn.hash
    assert tiny_cnn.functions == ["main"] and tiny_cnn.kernels == []
    main = tiny_cnn.function("main")
    ops = {node.op for node in main.nodes if node.kind == "call"}
    assert "conv2d" in ops
    assert main.nodes[main.params[0]].type["dtype"] == "f32"


def test_errors_are_tandem_errors_with_tandem_messages():
    with pytest.raises(tandem.Error, match=r"<text>:1:"):
        tandem.parse("this is not IR")
    with pytest.raises(tandem.Error, match="unknown pass 'NoSuchPass'"):
        tandem.parse_pipeline("InferType, NoSuchPass")
    with pytest.raises(tandem.Error, match="no_such_pipeline"):
        tandem.pipeline("no_such_pipeline")
    with pytest.raises(tandem.Error, match="does not exist"):
        tandem.open_database("/nonexistent/tune.db")
    with pytest.raises(tandem.Error, match="no such file"):
        tandem.load_plugin("/nonexistent/libplugin.so")
    with pytest.raises(tandem.Error, match="unknown op 'no_such_op'"):
        tandem.op("no_such_op")


def test_pipelines_look_up_compose_print_and_nest():
    joint = tandem.pipeline("joint")
    assert tandem.parse_pipeline(joint.text) == joint  # canonical text round-trips
    assert "TuneKernels" in joint.tree()
    names = [p["name"] for p in tandem.pipelines()]
    assert "joint" in names and "default_heuristic" in names
    nested = tandem.parse_pipeline("InferType, TuneLayout(eval=[FoldConstant, TuneKernels(trials=8)])")
    tune_layout = nested.nested[1]
    assert tune_layout.is_tuning and tune_layout.name == "TuneLayout"
    assert [p.name for p in tune_layout.nested] == ["FoldConstant", "TuneKernels"]
    assert tune_layout.nested[1].arguments == {"trials": 8}
    composed = tandem.parse_pipeline("InferType") + tandem.parse_pipeline("FoldConstant, FuseOps")
    assert composed.text == "InferType, FoldConstant, FuseOps"
    assert tandem.sequential([composed, tandem.parse_pipeline("Legalize")]).text.endswith("Legalize")
    assert any(p["name"] == "TuneLayout" and p["is_tuning"] for p in tandem.passes())


def test_build_and_run_match_stored_outputs_and_reference(paths, tiny_cnn):
    inputs = stored(paths, "input")
    expected = stored(paths, "output")
    optimized = tandem.compile(tiny_cnn, "default_heuristic")
    exe = tandem.build(optimized, threads=1)
    assert exe.input_types == [f"f32[{','.join(map(str, inputs[0].shape))}]"]
    outputs = exe.run(*inputs)
    assert len(outputs) == len(expected)
    for out, want in zip(outputs, expected):
        assert out.shape == want.shape
        assert tandem.relative_error(out, want) < 1e-4
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-4)
    reference = tandem.reference(tiny_cnn, inputs)
    assert tandem.relative_error(outputs[0], reference[0]) < 1e-4


def test_zero_copy_where_the_layout_allows(paths, tiny_cnn):
    exe = tandem.build(tandem.compile(tiny_cnn), threads=1)
    x = stored(paths, "input")[0]
    out = exe.run(np.array(x))  # NumPy's own memory: copied once
    assert exe.copied_inputs == 1
    # The outputs view Tandem's result tensors (no copy): they do not own their memory.
    assert not out[0].flags["OWNDATA"]
    aligned = tandem.empty(x.shape, x.dtype)
    aligned[...] = x
    again = exe.run(aligned)  # Tandem's memory: used in place
    assert exe.copied_inputs == 0
    np.testing.assert_array_equal(out[0], again[0])
    with pytest.raises(tandem.Error, match="input 0: got an array of f64"):
        exe.run(x.astype(np.float64))


def test_ops_catalog_lists_implementations():
    catalog = {op["op"]: op for op in tandem.ops()}
    conv = catalog["conv2d"]
    assert conv["compute"] and conv["compute_operands"] == ["data", "weight"]
    assert "llvm" in conv["default_schedules"]
    assert any(b["backend"] == "onednn" and b["role"] == "anchor" for b in conv["backends"])
    assert tandem.op("relu")["fusion_kind"] == "elementwise"
    assert "conv2d" in tandem.ops_text() and "compute definition: yes" in tandem.ops_text("conv2d")


def test_bench_times_executables_and_callables(paths, tiny_cnn):
    exe = tandem.build(tandem.compile(tiny_cnn), threads=1)
    x = stored(paths, "input")[0]
    calls = []

    def numpy_contender():
        calls.append(1)
        np.tanh(x)

    result = tandem.bench({"tandem": exe.bind(x), "numpy": numpy_contender}, passes=2,
                          min_time=0.01, min_repeats=2)
    assert set(result) == {"tandem", "numpy"}
    for row in result.values():
        assert 0 < row["best_seconds"] <= row["worst_seconds"]
        assert len(row["block_medians"]) == 2
    assert len(calls) >= 2 * result["numpy"]["repeats"]
    with pytest.raises(tandem.Error, match="bench contender broken"):
        tandem.bench({"broken": lambda: 1 / 0}, passes=1, min_time=0.001, min_repeats=1)
