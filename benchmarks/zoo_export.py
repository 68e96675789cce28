"""Export the networks bench_zoo.py measures, at their standard input sizes, with torch's TorchScript
exporter at opset 17 (what the issue measured): untrained torchvision networks (weights=None, seeded,
nothing downloaded), each as DIR/<net>/model.onnx. torch is needed only here, in its own environment, never
by sonnx-check or its tests:

    python3 -m venv /work/venv-torch
    /work/venv-torch/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx onnxscript
    /work/venv-torch/bin/python benchmarks/zoo_export.py /work/exports [--net resnet18 ...]

sample_models/export_torch.py --zoo exports smaller inputs (64x64 for most) and three exporters, for the
samples; this one exports what users deploy: 224x224, 299x299 for Inception-v3.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

OPSET = 17
STANDARD = (1, 3, 224, 224)


def networks() -> dict[str, tuple[Callable[[], object], tuple[int, ...]]]:
    """Each network's constructor and input shape (torchvision imported here only)."""
    from torchvision import models

    return {
        "resnet18": (lambda: models.resnet18(weights=None), STANDARD),
        "shufflenet_v2": (lambda: models.shufflenet_v2_x1_0(weights=None), STANDARD),
        "efficientnet_b0": (lambda: models.efficientnet_b0(weights=None), STANDARD),
        "densenet121": (lambda: models.densenet121(weights=None), STANDARD),
        "inception_v3": (
            lambda: models.inception_v3(weights=None, aux_logits=False, init_weights=True),
            (1, 3, 299, 299),
        ),
        "vgg16": (lambda: models.vgg16(weights=None), STANDARD),
        "vgg11": (lambda: models.vgg11(weights=None), STANDARD),
    }


def export(out: Path, nets: list[str]) -> None:
    import torch

    table = networks()
    for net in nets:
        build, shape = table[net]
        folder = out / net
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "model.onnx"
        if target.exists():
            print(f"{target}: kept (already exported)", flush=True)
            continue
        torch.manual_seed(0)
        model = build().eval()
        # Written under a temporary name and renamed when complete: others may read the folder meanwhile.
        partial = folder / "model.onnx.partial"
        torch.onnx.export(
            model, (torch.zeros(*shape),), str(partial), dynamo=False, opset_version=OPSET,
            input_names=["image"], output_names=["logits"],
        )  # fmt: skip
        partial.replace(target)
        print(f"{target}: input {'x'.join(map(str, shape))}, opset {OPSET}", flush=True)


NETS = (
    "resnet18", "shufflenet_v2", "efficientnet_b0", "densenet121", "inception_v3", "vgg16", "vgg11",
)  # fmt: skip

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="the folder to export into (outside the repository)")
    parser.add_argument("--net", action="append", choices=NETS, help="only this one (repeatable)")
    args = parser.parse_args()
    export(args.out, args.net or list(NETS))
