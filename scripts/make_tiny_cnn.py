#!/usr/bin/env python3
"""Generates examples/models/tiny_cnn: a small CNN in ONNX (opset 13) with one test data set.

The model takes input [1,3,32,32] and returns logits [1,10]:

    conv1(3->16, 3x3, pad 1, bias) - BatchNormalization - Relu                 -> a
    conv2(16->16) - BatchNormalization - Relu - conv3(16->16) - BatchNormalization,
    Add(a) - Relu                                                             (residual block)
    MaxPool(2x2, stride 2) - conv4(16->32, 3x3, stride 2, pad 1, bias) - Relu
    GlobalAveragePool - Flatten - Gemm(transB=1)                             -> [1,10]

Weights and the input are random with a fixed seed. The expected output (output_0.pb) is computed
here with numpy in float64, independently of Tandem.

This is a development-time script, not part of set-up or the tests (the generated files are
committed). It needs the Python packages `onnx` and `numpy`:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install onnx numpy
    /tmp/venv/bin/python scripts/make_tiny_cnn.py
"""

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "examples" / "models" / "tiny_cnn"
EPSILON = 1e-5


def conv2d(x, w, b, stride, pad):
    """Direct convolution: x [N,C,H,W], w [O,C,kH,kW], symmetric padding."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for dy in range(kh):
        for dx in range(kw):
            patch = x[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, dy, dx])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def batch_norm(x, gamma, beta, mean, var):
    shape = (1, -1, 1, 1)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + EPSILON) * gamma.reshape(
        shape
    ) + beta.reshape(shape)


def relu(x):
    return np.maximum(x, 0)


def max_pool_2x2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def main():
    rng = np.random.default_rng(20240611)
    weights = {}

    def param(name, shape, scale):
        weights[name] = (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)
        return weights[name]

    def bn_params(prefix, channels):
        param(prefix + ".gamma", (channels,), 0.5)
        weights[prefix + ".gamma"] += 1.0
        param(prefix + ".beta", (channels,), 0.1)
        param(prefix + ".mean", (channels,), 0.1)
        weights[prefix + ".var"] = rng.uniform(0.5, 1.5, size=(channels,)).astype(np.float32)

    param("conv1.weight", (16, 3, 3, 3), 1 / np.sqrt(27))
    param("conv1.bias", (16,), 0.1)
    bn_params("bn1", 16)
    param("conv2.weight", (16, 16, 3, 3), 1 / np.sqrt(144))
    bn_params("bn2", 16)
    param("conv3.weight", (16, 16, 3, 3), 1 / np.sqrt(144))
    bn_params("bn3", 16)
    param("conv4.weight", (32, 16, 3, 3), 1 / np.sqrt(144))
    param("conv4.bias", (32,), 0.1)
    param("fc.weight", (10, 32), 1 / np.sqrt(32))
    param("fc.bias", (10,), 0.1)
    x = rng.uniform(-1, 1, size=(1, 3, 32, 32)).astype(np.float32)

    def bn_inputs(prefix):
        return [prefix + s for s in (".gamma", ".beta", ".mean", ".var")]

    conv3x3 = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"], "conv1", **conv3x3),
        helper.make_node("BatchNormalization", ["c1"] + bn_inputs("bn1"), ["b1"], "bn1", epsilon=EPSILON),
        helper.make_node("Relu", ["b1"], ["a"], "relu1"),
        helper.make_node("Conv", ["a", "conv2.weight"], ["c2"], "conv2", **conv3x3),
        helper.make_node("BatchNormalization", ["c2"] + bn_inputs("bn2"), ["b2"], "bn2", epsilon=EPSILON),
        helper.make_node("Relu", ["b2"], ["r2"], "relu2"),
        helper.make_node("Conv", ["r2", "conv3.weight"], ["c3"], "conv3", **conv3x3),
        helper.make_node("BatchNormalization", ["c3"] + bn_inputs("bn3"), ["b3"], "bn3", epsilon=EPSILON),
        helper.make_node("Add", ["b3", "a"], ["sum"], "residual"),
        helper.make_node("Relu", ["sum"], ["r3"], "relu3"),
        helper.make_node("MaxPool", ["r3"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node(
            "Conv", ["p", "conv4.weight", "conv4.bias"], ["c4"], "conv4", strides=[2, 2], **conv3x3
        ),
        helper.make_node("Relu", ["c4"], ["r4"], "relu4"),
        helper.make_node("GlobalAveragePool", ["r4"], ["g"], "gap"),
        helper.make_node("Flatten", ["g"], ["f"], "flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["output"], "fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    model = helper.make_model(
        graph, producer_name="tandem scripts/make_tiny_cnn.py", opset_imports=[helper.make_opsetid("", 13)]
    )
    model.ir_version = 7
    onnx.checker.check_model(model)

    w = {name: value.astype(np.float64) for name, value in weights.items()}

    def bn(t, prefix):
        return batch_norm(t, *(w[name] for name in bn_inputs(prefix)))

    a = relu(bn(conv2d(x.astype(np.float64), w["conv1.weight"], w["conv1.bias"], 1, 1), "bn1"))
    r2 = relu(bn(conv2d(a, w["conv2.weight"], None, 1, 1), "bn2"))
    r3 = relu(bn(conv2d(r2, w["conv3.weight"], None, 1, 1), "bn3") + a)
    r4 = relu(conv2d(max_pool_2x2(r3), w["conv4.weight"], w["conv4.bias"], 2, 1))
    logits = r4.mean(axis=(2, 3)) @ w["fc.weight"].T + w["fc.bias"]

    data = OUT / "test_data_set_0"
    data.mkdir(parents=True, exist_ok=True)
    onnx.save(model, OUT / "model.onnx")
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x, "input").SerializeToString())
    output = logits.astype(np.float32)
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(output, "output").SerializeToString())
    print(f"wrote {OUT} ({(OUT / 'model.onnx').stat().st_size} bytes); output {output.ravel()[:4]} ...")


if __name__ == "__main__":
    main()
