#!/usr/bin/env python3
"""Export Hugging Face transformer architectures with random weights as ONNX models with dynamic
batch and sequence axes, with test data at several (batch, sequence) sizes.

A development tool for checking dynamic builds on real exports, not part of set-up or tests. It
needs Debian's python3-torch and python3-onnx and the PyPI package `transformers` (4.36 works
with Debian's torch 1.13), for example in a virtual environment that sees the system packages:

    /usr/bin/python3 -m venv --system-site-packages /tmp/hub
    /tmp/hub/bin/pip install transformers==4.36.2
    /tmp/hub/bin/python scripts/export_hub_models.py /tmp/hub_models gpt2 opt llama

Each model is built from a small configuration (2 layers, hidden 128, 4 heads, vocabulary 1000)
and written to OUT/NAME/model.onnx with inputs input_ids and attention_mask (and token_type_ids
for BERT) of shape [batch, sequence]; OUT/NAME/data_BxS holds input_N.pb and output_0.pb as
computed by PyTorch, the last row's mask zero from three quarters of the sequence on. Check one
with:

    tandem run OUT/NAME/model.onnx --dynamic batch=1:4 --dynamic sequence=1:64 \\
        --inputs OUT/NAME/data_3x33 --check OUT/NAME/data_3x33
"""
import argparse
import os
import sys

import torch
from onnx import numpy_helper

SIZES = [(1, 1), (1, 5), (2, 16), (3, 33), (4, 64)]
VOCABULARY = 1000


def architectures():
    import transformers as t

    small = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                 intermediate_size=256, vocab_size=VOCABULARY)
    return {
        "gpt2": (lambda: t.GPT2LMHeadModel(t.GPT2Config(
            n_layer=2, n_embd=128, n_head=4, vocab_size=VOCABULARY, n_positions=128)),
                 (), "logits"),
        "bert": (lambda: t.BertModel(t.BertConfig(**small)), ("token_type_ids",),
                 "last_hidden_state"),
        "distilbert": (lambda: t.DistilBertModel(t.DistilBertConfig(
            n_layers=2, dim=128, n_heads=4, hidden_dim=256, vocab_size=VOCABULARY)), (),
                       "last_hidden_state"),
        "roberta": (lambda: t.RobertaModel(t.RobertaConfig(**small)), (), "last_hidden_state"),
        "t5_encoder": (lambda: t.T5EncoderModel(t.T5Config(
            num_layers=2, d_model=128, num_heads=4, d_ff=256, d_kv=32, vocab_size=VOCABULARY)),
                       (), "last_hidden_state"),
        "opt": (lambda: t.OPTForCausalLM(t.OPTConfig(
            num_hidden_layers=2, hidden_size=128, num_attention_heads=4, ffn_dim=256,
            vocab_size=VOCABULARY, word_embed_proj_dim=128, max_position_embeddings=128)), (),
                "logits"),
        "llama": (lambda: t.LlamaForCausalLM(t.LlamaConfig(
            **small, max_position_embeddings=128)), (), "logits"),
    }


class FirstOutput(torch.nn.Module):
    """The model called with keyword inputs, returning its first output."""

    def __init__(self, model, extra_inputs):
        super().__init__()
        self.model = model
        self.extra_inputs = extra_inputs

    def forward(self, input_ids, attention_mask, *extra):
        inputs = dict(input_ids=input_ids, attention_mask=attention_mask)
        inputs.update(zip(self.extra_inputs, extra))
        return self.model(**inputs, return_dict=False)[0]


def inputs_at(batch, sequence, extra_inputs):
    ids = torch.randint(0, VOCABULARY, (batch, sequence))
    mask = torch.ones(batch, sequence, dtype=torch.int64)
    mask[-1, max(1, sequence * 3 // 4):] = 0
    return [ids, mask] + [torch.zeros(batch, sequence, dtype=torch.int64) for _ in extra_inputs]


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(out, name, make, extra_inputs, output_name):
    torch.manual_seed(0)
    model = FirstOutput(make(), extra_inputs).eval()
    names = ["input_ids", "attention_mask"] + list(extra_inputs)
    axes = {n: {0: "batch", 1: "sequence"} for n in names + [output_name]}
    directory = os.path.join(out, name)
    os.makedirs(directory, exist_ok=True)
    torch.onnx.export(model, tuple(inputs_at(2, 9, extra_inputs)),
                      os.path.join(directory, "model.onnx"), input_names=names,
                      output_names=[output_name], dynamic_axes=axes, opset_version=14)
    model.eval()  # the export restores the training mode it found
    for batch, sequence in SIZES:
        data = os.path.join(directory, f"data_{batch}x{sequence}")
        os.makedirs(data, exist_ok=True)
        inputs = inputs_at(batch, sequence, extra_inputs)
        with torch.no_grad():
            output = model(*inputs)
        for k, (input_name, tensor) in enumerate(zip(names, inputs)):
            write_tensor(os.path.join(data, f"input_{k}.pb"), tensor.numpy(), input_name)
        write_tensor(os.path.join(data, "output_0.pb"), output.numpy(), output_name)
    print(f"{name}: {directory}/model.onnx, data at {', '.join(f'{b}x{s}' for b, s in SIZES)}")


def main():
    known = architectures()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="directory to write the models into")
    parser.add_argument("names", nargs="*", default=sorted(known),
                        help=f"architectures (default: all of {', '.join(sorted(known))})")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        sys.exit(f"unknown architecture(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    for name in args.names:
        export(args.out, name, *known[name])


if __name__ == "__main__":
    main()
