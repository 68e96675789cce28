"""Export real torch networks with torch's two ONNX exporters.

Without options: the same small CNN (and a residual one) into sample_models/torch/, real exporter outputs kept
to show what sonnx-check says about the models users actually have (the TorchScript exporter leaves MaxPool's
auto_pad and storage_order to their defaults, for instance).

With --zoo DIR: eight image classifiers (LeNet-5, and torchvision's AlexNet, VGG-11, ResNet-18, SqueezeNet
1.0, GoogLeNet, MobileNet-v2 and EfficientNet-b0, untrained: weights=None, seeded, nothing downloaded), each
as DIR/<net>-<exporter>/model.onnx for three exporters: TorchScript at opset 17 and 20, and dynamo (opset 20,
weights in model.onnx.data). About 2.5 GB in all (VGG-11 alone 1.5 GB), so they are not committed. Inputs are
as small as each network allows: 1x1x32x32 for LeNet, 1x3x224x224 for AlexNet and VGG-11 (TorchScript exports
their adaptive pooling only where it divides the feature map), 1x3x64x64 for the others.

torch is needed only here, never by sonnx-check:

    python -m venv .venv-torch
    .venv-torch/bin/pip install torch==2.14.1 torchvision==0.29.1 onnx onnxscript
    .venv-torch/bin/python sample_models/export_torch.py
    .venv-torch/bin/python sample_models/export_torch.py --zoo exports/ [--net resnet18 --exporter dynamo]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
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


class _BasicBlock(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.down = (
            nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))
            if stride != 1 or inputs != outputs
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + self.down(x))


class ResNet18(nn.Module):
    """ResNet-18's layout (11.7M parameters), written out so that no torchvision and no download is needed:
    a realistic size for measuring --compare (benchmarks), not committed as a sample (45 MB)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        widths, layers, inputs = (64, 128, 256, 512), [], 64
        for stage, width in enumerate(widths):
            stride = 1 if stage == 0 else 2
            layers += [_BasicBlock(inputs, width, stride), _BasicBlock(width, width, 1)]
            inputs = width
        self.layers = nn.Sequential(*layers)
        self.pool = nn.MaxPool2d(7)  # global max pooling: GlobalAveragePool has no SONNX specification yet
        self.head = nn.Linear(512, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def export_resnet18(path: Path) -> None:
    torch.manual_seed(0)
    torch.onnx.export(
        ResNet18().eval(), (torch.zeros(1, 3, 224, 224),), str(path), dynamo=True, opset_version=OPSET,
        input_names=["image"], output_names=["logits"], external_data=False,
    )  # fmt: skip


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


class LeNet5(nn.Module):
    """LeCun et al. (1998) with Relu and MaxPool in place of tanh and subsampling: 1x32x32 to 10 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


def _zoo() -> dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]]:
    """Each network's constructor and input shape (torchvision imported only for --zoo)."""
    from torchvision import models

    small = (1, 3, 64, 64)
    return {
        "lenet": (LeNet5, (1, 1, 32, 32)),
        "alexnet": (lambda: models.alexnet(weights=None), (1, 3, 224, 224)),
        "vgg11": (lambda: models.vgg11(weights=None), (1, 3, 224, 224)),
        "resnet18": (lambda: models.resnet18(weights=None), small),
        "squeezenet": (lambda: models.squeezenet1_0(weights=None), small),
        "googlenet": (lambda: models.googlenet(weights=None, aux_logits=False, init_weights=True), small),
        "mobilenet_v2": (lambda: models.mobilenet_v2(weights=None), small),
        "efficientnet_b0": (lambda: models.efficientnet_b0(weights=None), small),
    }


NETS = ("lenet", "alexnet", "vgg11", "resnet18", "squeezenet", "googlenet", "mobilenet_v2", "efficientnet_b0")
EXPORTERS = {  # name: (dynamo, opset)
    "torchscript17": (False, 17),
    "torchscript20": (False, 20),
    "dynamo": (True, 20),
}


def export_zoo(out: Path, nets: list[str], exporters: list[str]) -> None:
    zoo = _zoo()
    for net in nets:
        build, shape = zoo[net]
        for exporter in exporters:
            dynamo, opset = EXPORTERS[exporter]
            folder = out / f"{net}-{exporter}"
            folder.mkdir(parents=True, exist_ok=True)
            torch.manual_seed(0)
            model = build().eval()
            kwargs = {"external_data": True} if dynamo else {}
            torch.onnx.export(
                model, (torch.zeros(*shape),), str(folder / "model.onnx"), dynamo=dynamo, opset_version=opset,
                input_names=["image"], output_names=["logits"], **kwargs,
            )  # fmt: skip
            print(f"{folder / 'model.onnx'}: input {'x'.join(map(str, shape))}, opset {opset}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "torch")
    parser.add_argument("--resnet18", type=Path, metavar="PATH", help="export a ResNet-18-sized network")
    parser.add_argument("--zoo", type=Path, metavar="DIR", help="export the eight classifiers into DIR")
    parser.add_argument("--net", action="append", choices=NETS, help="with --zoo: only this one (repeatable)")
    parser.add_argument("--exporter", action="append", choices=list(EXPORTERS), help="the same for exporters")
    args = parser.parse_args()
    if args.zoo:
        export_zoo(args.zoo, args.net or list(NETS), args.exporter or list(EXPORTERS))
    elif args.resnet18:
        export_resnet18(args.resnet18)
    else:
        export(args.out)
