"""The example plugin (examples/plugin/) built against this build installed into a fresh prefix
(`cmake --install`), then loaded by the installed `tandem` (--load-plugin) and by the Python
module (tandem.load_plugin): its pass used in pipeline text, its backend placed and run, both
checked against the model's stored outputs and the reference interpreter."""

import os
import subprocess

import pytest

import tandem


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(paths, work_dir):
    if not paths.build:
        pytest.skip("needs --tandem-build (the build tree to install)")
    prefix = os.path.join(work_dir, "prefix")
    run([paths.cmake, "--install", paths.build, "--prefix", prefix])
    plugin_build = os.path.join(work_dir, "plugin-build")
    run([paths.cmake, "-S", os.path.join(paths.source, "examples", "plugin"), "-B", plugin_build,
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"])
    run([paths.cmake, "--build", plugin_build])
    plugin = os.path.join(plugin_build, "libmy_passes.so")
    assert os.path.exists(plugin)
    runtime = [os.path.join(root, name) for root, _, names in os.walk(prefix) for name in names
               if name.startswith("libtandem_runtime.so")]
    return {"tandem": os.path.join(prefix, "bin", "tandem"), "plugin": plugin,
            "runtime": runtime[0]}


def test_plugin_from_the_installed_cli(paths, installed):
    tandem_program, plugin = installed["tandem"], installed["plugin"]
    model = os.path.join(paths.tiny_cnn, "model.onnx")
    data = os.path.join(paths.tiny_cnn, "test_data_set_0")
    listed = run([tandem_program, "--load-plugin", plugin, "pipelines", "--passes"])
    assert "ReluToClip  [heuristic pass; requires InferType]" in listed
    # The plugin's pass in pipeline text; the result matches the stored outputs.
    out = run([tandem_program, "--load-plugin", plugin, "compile", model, "--pipeline-text",
               "InferType, ReluToClip", "--print-ir-after", "ReluToClip"])
    assert "clip(" in out and "relu(" not in out.split("after ReluToClip")[-1]
    checked = run([tandem_program, "run", model, "--load-plugin", plugin, "--pipeline-text",
                   "InferType, ReluToClip, FuseOps", "--inputs", data, "--check", data,
                   "--repeat", "1"])
    assert checked.count(") ok") == 2  # the reference interpreter and the stored outputs
    # The plugin's backend placed, compiled and run.
    placed = run([tandem_program, "--load-plugin", plugin, "run", model, "--pipeline-text",
                  'InferType, PlaceOnBackend(backend="plugin_relu"), FuseOps', "--inputs", data,
                  "--check", data, "--repeat", "1"])
    assert "plugin_relu: a loop of max(x, 0)" in placed and placed.count(") ok") == 2
    assert "plugin_relu: pattern relu as anchor" in run(
        [tandem_program, "--load-plugin", plugin, "ops", "relu"])
    # Without the plugin the pass is unknown, and a file that is no plugin is refused.
    refused = subprocess.run([tandem_program, "compile", model, "--pipeline-text", "ReluToClip"],
                             capture_output=True, text=True)
    assert refused.returncode == 1 and "unknown pass 'ReluToClip'" in refused.stderr
    not_a_plugin = subprocess.run([tandem_program, "--load-plugin", installed["runtime"], "ops"],
                                  capture_output=True, text=True)
    assert not_a_plugin.returncode == 1 and "not a Tandem plugin" in not_a_plugin.stderr


def test_plugin_from_python(paths, installed):
    registered = tandem.load_plugin(installed["plugin"])
    assert set(registered) == {"pass ReluToClip", "backend plugin_relu",
                               "schedule_rule plugin_auto_inline",
                               "mutator plugin_mutate_tile_size"}
    assert tandem.load_plugin(installed["plugin"]) == registered  # loaded once
    model = tandem.import_onnx(os.path.join(paths.tiny_cnn, "model.onnx"))
    data = os.path.join(paths.tiny_cnn, "test_data_set_0")
    inputs = tandem.read_tensors(data, "input")
    expected = tandem.read_tensors(data, "output")[0]
    pipeline = tandem.parse_pipeline("InferType, ReluToClip, FuseOps")
    optimized = tandem.compile(model, pipeline)
    assert not any(n.op == "relu" for n in optimized.function().nodes)
    out = tandem.build(optimized, threads=1).run(*inputs)[0]
    assert tandem.relative_error(out, expected) < 1e-4
    placed = tandem.compile(model, tandem.parse_pipeline(
        'InferType, PlaceOnBackend(backend="plugin_relu"), FuseOps'))
    assert any(n.kind == "call_extern" for n in placed.function().nodes)
    out = tandem.build(placed, threads=1).run(*inputs)[0]
    assert tandem.relative_error(out, expected) < 1e-4
    assert any(b["backend"] == "plugin_relu" for b in tandem.op("relu")["backends"])
