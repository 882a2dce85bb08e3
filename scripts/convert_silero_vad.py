#!/usr/bin/env python3
"""Convert Silero VAD v5 (16 kHz, ONNX opset 15) into a float32 safetensors file.

izwi runs the network itself (include/izwi/models/silero_vad.hpp); this script
only moves the trained weights out of the ONNX graph. Needs Debian's
python3-onnx and python3-numpy (/usr/bin/python3). No `safetensors` package is
used: the format is 8 bytes of little-endian header length, a JSON header and
the raw tensor bytes, which is simple enough to write here.

    /usr/bin/python3 scripts/convert_silero_vad.py \
        ../shared/fixtures/silero-vad/silero_vad_16k_op15.onnx \
        assets/silero-vad/silero_vad_v5_16k.safetensors

The LICENSE file next to the ONNX model is copied beside the output.
"""
import argparse
import json
import pathlib
import shutil
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# Initializers of the 16 kHz graph and the shapes the C++ model expects. The
# names are kept as in the graph (PyTorch module paths) so a reader can trace
# each tensor back to the model it came from.
EXPECTED = {
    "model.stft.forward_basis_buffer": (258, 1, 256),
    "model.encoder.0.reparam_conv.weight": (128, 129, 3),
    "model.encoder.0.reparam_conv.bias": (128,),
    "model.encoder.1.reparam_conv.weight": (64, 128, 3),
    "model.encoder.1.reparam_conv.bias": (64,),
    "model.encoder.2.reparam_conv.weight": (64, 64, 3),
    "model.encoder.2.reparam_conv.bias": (64,),
    "model.encoder.3.reparam_conv.weight": (128, 64, 3),
    "model.encoder.3.reparam_conv.bias": (128,),
    # PyTorch LSTMCell layout: rows are the gates in order input, forget, cell
    # (g), output. The ONNX graph reorders them to ONNX's i,o,f,c with Slice +
    # Concat at run time; the stored initializers keep PyTorch's order.
    "model.decoder.rnn.weight_ih": (512, 128),
    "model.decoder.rnn.weight_hh": (512, 128),
    "model.decoder.rnn.bias_ih": (512,),
    "model.decoder.rnn.bias_hh": (512,),
    "model.decoder.decoder.2.weight": (1, 128, 1),
    "model.decoder.decoder.2.bias": (1,),
}


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad so the data section starts 8-aligned
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for blob in blobs:
            out.write(blob)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("onnx_model", type=pathlib.Path)
    parser.add_argument("output", type=pathlib.Path)
    args = parser.parse_args()

    model = onnx.load(str(args.onnx_model))
    found = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    tensors = {}
    for name, shape in EXPECTED.items():
        if name not in found:
            sys.exit(f"{args.onnx_model}: initializer {name} is missing")
        array = found[name].astype(np.float32)
        if array.shape != shape:
            sys.exit(f"{args.onnx_model}: {name} has shape {array.shape}, expected {shape}")
        tensors[name] = array

    # Facts of the graph the C++ port relies on; fail loudly if a different
    # export is given.
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    attrs = [{a.name: onnx.helper.get_attribute_value(a) for a in n.attribute} for n in convs]
    strides = [list(a["strides"]) for a in attrs]
    if strides != [[128], [1], [2], [2], [1], [1]]:
        sys.exit(f"{args.onnx_model}: unexpected conv strides {strides}")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_safetensors(args.output, tensors, {
        "format": "izwi",
        "model": "silero-vad v5, 16 kHz",
        "source": args.onnx_model.name,
        "lstm_gate_order": "ifgo",
        "license": "MIT (see LICENSE beside this file)",
    })
    licence = args.onnx_model.parent / "LICENSE"
    if licence.exists():
        shutil.copyfile(licence, args.output.parent / "LICENSE")
    print(f"wrote {args.output} ({args.output.stat().st_size} bytes, {len(tensors)} tensors)")


if __name__ == "__main__":
    main()
