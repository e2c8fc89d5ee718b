#!/usr/bin/env python3
"""Export torchvision image classifiers with random weights as ONNX models whose input batch,
height and width are dynamic, with test data at several image sizes and batches.

A development tool for checking dynamic builds of convolutional networks (strided convolutions
and pools along a dynamic axis), not part of set-up or tests. It needs Debian's python3-torch,
python3-torchvision and python3-onnx:

    /usr/bin/python3 scripts/export_vision_models.py /tmp/vision_models resnet18 mobilenet_v2

OUT/NAME/model.onnx takes `input` of shape [batch, 3, height, width]; OUT/NAME/data_HxW holds
input_0.pb and output_0.pb as computed by PyTorch at batch 1, OUT/NAME/batch_B_HxW at batch B.
Check one with:

    tandem run OUT/NAME/model.onnx --symbol batch=1 --dynamic height=64:224 \\
        --dynamic width=64:224 --inputs OUT/NAME/data_97x113 --check OUT/NAME/data_97x113
    tandem run OUT/NAME/model.onnx --dynamic batch=1:8 --symbol height=224 --symbol width=224 \\
        --inputs OUT/NAME/batch_3_224x224 --check OUT/NAME/batch_3_224x224
"""
import argparse
import os
import sys

import torch
import torchvision
from onnx import numpy_helper

# (height, width) at batch 1: the bound, smaller and odd sizes, and the range's minimum.
SIZES = [(224, 224), (160, 192), (97, 113), (129, 64), (64, 64)]
# (batch, height, width).
BATCHES = [(3, 224, 224), (2, 97, 113)]

ARCHITECTURES = {
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "efficientnet_b0": torchvision.models.efficientnet_b0,
}


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(name, out):
    torch.manual_seed(0)
    model = ARCHITECTURES[name](weights=None).eval()
    directory = os.path.join(out, name)
    os.makedirs(directory, exist_ok=True)
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), os.path.join(directory, "model.onnx"),
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"},
                                    "logits": {0: "batch"}}, opset_version=13)
    folders = [(f"data_{h}x{w}", 1, h, w) for h, w in SIZES]
    folders += [(f"batch_{b}_{h}x{w}", b, h, w) for b, h, w in BATCHES]
    for folder, batch, height, width in folders:
        data = os.path.join(directory, folder)
        os.makedirs(data, exist_ok=True)
        image = torch.randn(batch, 3, height, width)
        with torch.no_grad():
            logits = model(image)
        write_tensor(os.path.join(data, "input_0.pb"), image.numpy(), "input")
        write_tensor(os.path.join(data, "output_0.pb"), logits.numpy(), "logits")
    print(f"{name}: {directory} ({', '.join(f for f, *_ in folders)})")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="directory to write OUT/NAME/ into")
    parser.add_argument("names", nargs="*", default=sorted(ARCHITECTURES),
                        help=f"architectures (default: all of {', '.join(sorted(ARCHITECTURES))})")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in ARCHITECTURES]
    if unknown:
        parser.error(f"unknown architecture(s) {', '.join(unknown)}; "
                     f"known: {', '.join(sorted(ARCHITECTURES))}")
    for name in args.names:
        export(name, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
