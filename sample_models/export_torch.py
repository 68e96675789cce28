"""Export the same small CNN with torch's two ONNX exporters into sample_models/torch/.

These are real exporter outputs, kept to show what sonnx-check says about the models users actually have
(the TorchScript exporter leaves MaxPool's auto_pad and storage_order to their defaults, for instance).
torch is needed only here, never by sonnx-check:

    python -m venv .venv-torch && .venv-torch/bin/pip install torch==2.13.0 onnx onnxscript
    .venv-torch/bin/python sample_models/export_torch.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import nn

OPSET = 20  # what many deployed toolchains pin; MaxPool-12 and Max-13 under it have the specified semantics


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.pool(torch.relu(self.conv1(x)))
        b = torch.maximum(a, torch.relu(self.conv2(a)))  # a Max node: the skip keeps the larger activation
        return self.head(torch.flatten(b, 1))


class ResidualCnn(nn.Module):
    """The operators every image classifier holds: Conv, BatchNormalization, Relu, MaxPool, a residual Add,
    Flatten, Gemm and Softmax (a ResNet basic block at the size of a sample)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn_stem = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.conv_a = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn_a = nn.BatchNorm2d(8)
        self.conv_b = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn_b = nn.BatchNorm2d(8)
        self.head = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # BatchNormalization after the pool: exporters fold a BatchNormalization that follows a Conv into it.
        stem = self.bn_stem(self.pool(torch.relu(self.stem(x))))
        branch = self.bn_b(self.conv_b(torch.relu(self.bn_a(self.conv_a(stem)))))
        block = torch.relu(branch + stem)
        return torch.softmax(self.head(torch.flatten(block, 1)), dim=1)


def export(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for stem, net in (("cnn", SmallCnn), ("residual_cnn", ResidualCnn)):
        torch.manual_seed(0)
        model = net().eval()
        example = (torch.zeros(1, 3, 16, 16),)
        torch.onnx.export(
            model, example, str(out / f"torchscript_{stem}.onnx"), dynamo=False, opset_version=OPSET,
            input_names=["image"], output_names=["logits"],
        )  # fmt: skip
        torch.onnx.export(
            model, example, str(out / f"dynamo_{stem}.onnx"), dynamo=True, opset_version=OPSET,
            input_names=["image"], output_names=["logits"], external_data=False,
        )  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "torch")
    export(parser.parse_args().out)
