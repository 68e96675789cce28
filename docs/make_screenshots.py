"""Regenerate the README's screenshots of the HTML report (docs/report-*.png) from a real run.

Needs the ``[report]`` extra and Chromium (Debian: ``apt-get install chromium``):

    pip install -e ".[report]"
    python docs/make_screenshots.py

Runs ``sonnx-check --compare`` on each model below, writes the report and the evidence record to a
temporary folder, and screenshots the report in headless Chromium (no network) at its summary, its
traceability matrix and its comparison. The models: the sample small CNN, and a ResNet-18 as torch's
TorchScript exporter writes it for inference (BatchNormalization folded into the Conv biases, opset 17),
built here with onnx.helper and random He-initialised weights, since torch is never a dependency (its
comparison takes about a minute).

Headless Chromium does not scroll to a fragment before its screenshot, so each view is a copy of the report
whose content before the view's heading is hidden (CSS ``:has``), not a different page.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MODELS = {"small_cnn": ROOT / "sample_models" / "conforming" / "small_cnn.onnx", "resnet18": None}
VIEWS = {"summary": "", "matrix": "#matrix-1", "comparison": "#comparison-1"}
WIDTH, HEIGHT = 1280, 1100


def resnet18(size: int = 224, seed: int = 0) -> onnx.ModelProto:
    """ResNet-18 (torchvision's layout) as the TorchScript exporter writes it for inference."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    weights: list[onnx.TensorProto] = []

    def conv(x: str, cin: int, cout: int, k: int, stride: int, pad: int, name: str) -> str:
        w = rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))
        weights.append(nh.from_array(w.astype(np.float32), f"{name}.weight"))
        weights.append(nh.from_array((rng.standard_normal(cout) * 0.01).astype(np.float32), f"{name}.bias"))
        out = f"/{name}/Conv_output_0"
        nodes.append(
            h.make_node(
                "Conv",
                [x, f"{name}.weight", f"{name}.bias"],
                [out],
                name=f"/{name}/Conv",
                auto_pad="NOTSET",
                dilations=[1, 1],
                group=1,
                kernel_shape=[k, k],
                pads=[pad] * 4,
                strides=[stride] * 2,
            )
        )
        return out

    def relu(x: str, name: str) -> str:
        nodes.append(h.make_node("Relu", [x], [f"/{name}/Relu_output_0"], name=f"/{name}/Relu"))
        return f"/{name}/Relu_output_0"

    x = relu(conv("input", 3, 64, 7, 2, 3, "conv1"), "relu")
    nodes.append(
        h.make_node(
            "MaxPool",
            [x],
            ["/maxpool/MaxPool_output_0"],
            name="/maxpool/MaxPool",
            auto_pad="NOTSET",
            ceil_mode=0,
            dilations=[1, 1],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            storage_order=0,
            strides=[2, 2],
        )
    )
    x, cin = "/maxpool/MaxPool_output_0", 64
    for layer, (cout, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)], start=1):
        for block in range(2):
            step, name = (stride if block == 0 else 1), f"layer{layer}.{block}"
            y = conv(
                relu(conv(x, cin, cout, 3, step, 1, f"{name}/conv1"), f"{name}/relu"),
                cout,
                cout,
                3,
                1,
                1,
                f"{name}/conv2",
            )
            shortcut = (
                conv(x, cin, cout, 1, step, 0, f"{name}/downsample/0") if step != 1 or cin != cout else x
            )
            nodes.append(h.make_node("Add", [y, shortcut], [f"/{name}/Add_output_0"], name=f"/{name}/Add"))
            x, cin = relu(f"/{name}/Add_output_0", f"{name}/relu_1"), cout
    nodes.append(h.make_node("GlobalAveragePool", [x], ["/avgpool/out"], name="/avgpool/GlobalAveragePool"))
    nodes.append(h.make_node("Flatten", ["/avgpool/out"], ["/Flatten_output_0"], name="/Flatten", axis=1))
    weights.append(nh.from_array((rng.standard_normal((1000, 512)) * 0.03).astype(np.float32), "fc.weight"))
    weights.append(nh.from_array(np.zeros(1000, np.float32), "fc.bias"))
    nodes.append(
        h.make_node(
            "Gemm",
            ["/Flatten_output_0", "fc.weight", "fc.bias"],
            ["output"],
            name="/fc/Gemm",
            alpha=1.0,
            beta=1.0,
            transA=0,
            transB=1,
        )
    )
    graph = h.make_graph(
        nodes,
        "main_graph",
        [h.make_tensor_value_info("input", T.FLOAT, [1, 3, size, size])],
        [h.make_tensor_value_info("output", T.FLOAT, [1, 1000])],
        initializer=weights,
    )
    model = h.make_model(
        graph, opset_imports=[h.make_opsetid("", 17)], producer_name="pytorch", producer_version="2.5.1"
    )
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)  # the exporter declares every shape


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        sys.exit("make_screenshots.py: Chromium is not installed (Debian: apt-get install chromium)")
    return found


def report(model: Path, folder: Path) -> Path:
    """Run the check the way a user does; the report is written even when the model has findings."""
    page = folder / f"{model.stem}.html"
    command = [
        sys.executable,
        "-c",
        "import sys; sys.path.insert(0, sys.argv.pop(1)); from sonnx_check.cli import main; main()",
        str(ROOT),
        "--isolated",
        "--compare",
        "--output-format",
        f"html:{page}",
        "--evidence",
        str(folder / f"{model.stem}.json"),
        model.relative_to(ROOT).as_posix() if model.is_relative_to(ROOT) else model.name,
    ]
    # a model of the repository by its path from the root, a generated one by its name, as a user runs it
    done = subprocess.run(
        command,
        cwd=ROOT if model.is_relative_to(ROOT) else model.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1) or not page.exists():
        sys.exit(f"make_screenshots.py: sonnx-check failed ({done.returncode}): {done.stderr.strip()}")
    return page


def view_of(page: Path, fragment: str) -> Path:
    """The report starting at ``fragment`` (an element id): everything before it hidden."""
    if not fragment:
        return page
    target = fragment.lstrip("#")
    hide = f"<style>*:has(~ #{target}), *:has(~ * #{target}) {{ display: none !important; }}</style>"
    text = page.read_text(encoding="utf-8").replace("</head>", hide + "</head>", 1)
    copy = page.with_name(f"{page.stem}-{target}.html")
    copy.write_text(text, encoding="utf-8")
    return copy


def screenshot(browser: str, page: Path, fragment: str, out: Path, profile: Path) -> None:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--hide-scrollbars",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--screenshot={out}",
        view_of(page, fragment).as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not out.exists():
        sys.exit(f"make_screenshots.py: chromium failed: {done.stderr.strip()[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNG files (default: docs/)")
    args = parser.parse_args()
    browser = chromium()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sonnx-check-screens-") as temporary:
        folder = Path(temporary)
        for name, model in MODELS.items():
            if model is None:
                model = folder / f"{name}.onnx"
                onnx.save(resnet18(), model)
            page = report(model, folder)
            for view, fragment in VIEWS.items():
                out = args.out / f"report-{name}-{view}.png"
                screenshot(browser, page, fragment, out, folder / f"profile-{view}")
                print(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out)


if __name__ == "__main__":
    main()
