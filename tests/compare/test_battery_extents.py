"""The edge battery at reduced extents (compare/edges/extents.py): every edge pattern placed at every position
class of the model's input is met by the reduced run, and a departure planted at a border or in the interior
is still found.

A position class is what decides a window's or an element's result apart from the values: along each axis,
which taps of the window fall in the padding or past the end; and the phase of each tap in every positional
edge pattern (signed zeros alternate over the flat index, the sparse patterns hold a value at every fifth
element, the checkerboard is the parity of the last two indices): all of it is the tap's flat index modulo
PATTERN_PERIOD and its last two indices' parity, or "padding"."""

from __future__ import annotations

import itertools
import math

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt
from hypothesis import given, settings
from hypothesis import strategies as st
from models import finish
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.edges import extents
from sonnx_check.compare.edges.extents import PATTERN_PERIOD, Window, reduced_shapes

EDGES = CompareOptions(datasets=("random",))
PAD = -1


def _phase(flat: int, row: int, column: int) -> tuple[int, int]:
    return flat % PATTERN_PERIOD, (row + column) % 2


def window_classes(axes: list[Window], extents_: tuple[int, int]) -> set[tuple[object, ...]]:
    """Every 2-D window of the input ``extents_`` as (its kind per axis, each tap's pattern phase)."""
    height, width = extents_
    rows, columns = (axis.classes(e) for axis, e in zip(axes, extents_, strict=True))
    (top, _), (left, _) = axes[0].pads(height), axes[1].pads(width)
    found = set()
    for (i, kind_i), (j, kind_j) in itertools.product(enumerate(rows), enumerate(columns)):
        taps = []
        for a, b in itertools.product(range(axes[0].kernel), range(axes[1].kernel)):
            r = i * axes[0].stride - top + a * axes[0].dilation
            c = j * axes[1].stride - left + b * axes[1].dilation
            inside = 0 <= r < height and 0 <= c < width
            taps.append(_phase(r * width + c, r, c) if inside else PAD)
        found.add((kind_i, kind_j, tuple(taps)))
    return found


@st.composite
def axes_and_extent(draw: st.DrawFn) -> tuple[Window, int]:
    kernel = draw(st.integers(1, 4))
    stride = draw(st.integers(1, 3))
    dilation = draw(st.integers(1, 2))
    auto = draw(st.sampled_from(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    span = (kernel - 1) * dilation + 1
    begin, end = draw(st.integers(0, span - 1)), draw(st.integers(0, span - 1))
    extent = draw(st.integers(span, 90))
    ceil_mode = draw(st.booleans())
    return Window(extent, kernel, stride, dilation, begin, end, auto, ceil_mode), extent


@settings(max_examples=60, deadline=None)
@given(axes_and_extent(), axes_and_extent())
def test_a_reduced_window_input_meets_every_window_class_and_pattern_phase(first, second) -> None:
    (rows, height), (columns, width) = first, second
    reduced = (rows.reduced(), columns.reduced())
    assert reduced[0] <= height and reduced[1] <= width
    assert rows.outputs(height) - rows.outputs(reduced[0]) == (height - reduced[0]) // rows.stride
    if rows.outputs(height) == 0 or columns.outputs(width) == 0:
        return
    assert window_classes([rows, columns], (height, width)) == window_classes([rows, columns], reduced)


def element_classes(shapes: list[tuple[int, ...]]) -> set[tuple[tuple[int, int], ...]]:
    """Every output element of a broadcast element-wise operator as each input's pattern phase there."""
    out_shape = np.broadcast_shapes(*shapes)
    found = set()
    for index in itertools.product(*(range(d) for d in out_shape)):
        phases = []
        for shape in shapes:
            own = tuple(0 if d == 1 else index[len(out_shape) - len(shape) + a] for a, d in enumerate(shape))
            flat = int(np.ravel_multi_index(own, shape)) if shape else 0
            row, column = (own[-2] if len(own) > 1 else 0), (own[-1] if own else 0)
            phases.append(_phase(flat, row, column))
        found.add(tuple(phases))
    return found


@st.composite
def broadcast_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    rank = draw(st.integers(1, 3))
    full = [draw(st.integers(1, 40)) for _ in range(rank)]
    second = tuple(d if draw(st.booleans()) else 1 for d in full[draw(st.integers(0, rank - 1)) :])
    return [tuple(full), second]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(broadcast_shapes())
def test_a_reduced_elementwise_input_meets_every_pattern_phase_pair(shapes) -> None:
    node = h.make_node("Add", ["a", "b"], ["y"])
    fed = [(p, np.dtype(np.float32), s) for p, s in enumerate(shapes)]
    reduced = reduced_shapes(node, fed, {})
    small = [reduced[p] for p in range(len(shapes))]
    assert all(math.prod(s) <= math.prod(f) for s, f in zip(small, shapes, strict=True))
    assert element_classes(shapes) == element_classes(small)


def test_axes_a_constant_depends_on_are_kept() -> None:
    add = h.make_node("Add", ["x", "bias"], ["y"])
    fed = [(0, np.dtype(np.float32), (1, 64, 56, 56))]
    assert reduced_shapes(add, fed, {1: (64, 1, 1)})[0] == (1, 64, 16, 16)
    norm = h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    assert reduced_shapes(norm, fed, {p: (64,) for p in range(1, 5)})[0] == (1, 64, 16, 16)
    concat = h.make_node("Concat", ["x", "z"], ["y"], axis=1)
    both = [*fed, (1, np.dtype(np.float32), (1, 32, 56, 56))]
    assert reduced_shapes(concat, both, {}) == {0: (1, 64, 16, 16), 1: (1, 32, 16, 16)}
    assert reduced_shapes(add, fed, {1: (64, 1, 1)}, extents.FULL)[0] == (1, 64, 56, 56)
    softmax = h.make_node("Softmax", ["x"], ["y"], axis=1)
    assert reduced_shapes(softmax, fed, {})[0] == (1, 64, 56, 56)


def conv_model() -> onnx.ModelProto:
    """Relu -> Conv 3x3, stride 1, pad 1, on [1, 2, 40, 40] (the battery runs it at [1, 2, 10 + 8, ...])."""
    rng = np.random.default_rng(0)
    weight = h.make_tensor("w", T.FLOAT, [3, 2, 3, 3], rng.uniform(-1, 1, 54).astype(np.float32))
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node("Conv", ["r", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 2, 40, 40])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    return finish(h.make_graph(nodes, "g", [x], [y], initializer=[weight]))


def pool_model() -> onnx.ModelProto:
    """Relu -> MaxPool 3x3, stride 2, pad 1, on [1, 2, 47, 47] (the battery runs it reduced)."""
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node(
            "MaxPool", ["r"], ["y"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]
        ),
    ]
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 2, 47, 47])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    return finish(h.make_graph(nodes, "g", [x], [y]))


def _conv_output(fake: FakeOrt, op_type: str = "Conv") -> str:
    lone = next(m for m in fake.sessions if m.graph.name == "sonnx-check node edges")
    number = next(k for k, n in enumerate(lone.graph.node) if n.op_type == op_type)
    return f"c{number}_out0"


def _conv_configuration(result, op_type: str = "Conv") -> dict:
    return next(c for c in result.comparison["node_edges"]["configurations"] if c["op_type"] == op_type)


def test_the_battery_runs_a_conv_at_reduced_extents_and_says_which(monkeypatch) -> None:
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(conv_model(), EDGES)
    config = _conv_configuration(result)
    [data] = [i for i in config["inputs"] if i["values"] == "edge"]
    assert data["shape"] == [1, 2, 20, 20] and data["model_shape"] == [1, 2, 40, 40]
    lone = next(m for m in fake.sessions if m.graph.name == "sonnx-check node edges")
    dims = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in lone.graph.input}
    assert [1, 2, 20, 20] in dims.values() and config["status"] == "match"

    full_size = CompareOptions(datasets=("random",), node_edges_extent=extents.FULL)
    full = _conv_configuration(compare_loaded(conv_model(), full_size))
    [data] = [i for i in full["inputs"] if i["values"] == "edge"]
    assert data["shape"] == [1, 2, 40, 40] and "model_shape" not in data


@pytest.mark.parametrize("op_type", ["Conv", "MaxPool"])
@pytest.mark.parametrize(
    "where",
    [
        (0, 0, 0, 0),  # the top-left corner: padding above and on the left
        (0, 1, -1, -1),  # the bottom-right corner: padding below and on the right
        (0, 1, 0, 7),  # the top border
        (0, 0, 9, -1),  # the right border
        (0, 1, 9, 9),  # the interior
    ],
)
def test_a_departure_at_a_border_or_inside_is_found_by_the_reduced_battery(
    monkeypatch, where, op_type
) -> None:
    """The fake runtime gets one output element of the lone Conv (MaxPool) wrong: the one at ``where`` (a
    position class of the output, -1 the last); the reduced battery finds it, on that configuration."""
    model, node = (conv_model, "conv") if op_type == "Conv" else (pool_model, "pool")

    def wrong(array: np.ndarray) -> np.ndarray:
        array[where] = np.float32(1e6) if np.isfinite(array[where]) else np.float32(0.0)
        return array

    fake = FakeOrt().install(monkeypatch)
    clean = compare_loaded(model(), EDGES)  # learns the lone model's output name
    [data] = [i for i in _conv_configuration(clean, op_type)["inputs"] if i["values"] == "edge"]
    assert data["shape"] != data["model_shape"]  # run reduced
    name = _conv_output(fake, op_type)
    FakeOrt(tamper={name: wrong}).install(monkeypatch)
    result = compare_loaded(model(), EDGES)
    assert _conv_configuration(result, op_type)["status"] == "diverges"
    found = [f for f in result.findings if f.rule == "RUNTIME.divergence" and f.node.name == node]
    assert found and found[0].data["scope"] == "node-edges"


def test_the_command_line_chooses_full_or_reduced_extents(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from sonnx_check import settings
    from sonnx_check.cli import main

    assert settings.NODE_EDGES_EXTENTS == extents.EXTENTS
    assert settings.BY_NAME["node_edges_extent"].default == extents.DEFAULT_EXTENT
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), path)
    shapes = {}
    for extent in extents.EXTENTS:
        result = CliRunner().invoke(
            main, ["--compare", "--format", "json", "--node-edges-extent", extent, str(path)]
        )
        model = json.loads(result.stdout)["models"][0]
        config = next(
            c for c in model["comparison"]["node_edges"]["configurations"] if c["op_type"] == "Conv"
        )
        shapes[extent] = next(i["shape"] for i in config["inputs"] if i["values"] == "edge")
    assert shapes == {"reduced": [1, 2, 20, 20], "full": [1, 2, 40, 40]}
    bad = CliRunner().invoke(main, ["--compare", "--node-edges-extent", "half", str(path)])
    assert bad.exit_code == 2 and "half" in bad.output


def test_configurations_whose_reduced_runs_coincide_run_once_and_keep_their_own_findings(
    monkeypatch,
) -> None:
    """Relu at 56x56 and at 66x66 both run at 16x16: one node in the battery's model, two configurations,
    a finding on each node."""
    nodes = [h.make_node("Relu", [f"x{i}"], [f"y{i}"], name=f"relu{i}") for i in range(2)]
    inputs = [h.make_tensor_value_info(f"x{i}", T.FLOAT, [1, 3, d, d]) for i, d in enumerate((56, 66))]
    outputs = [h.make_tensor_value_info(f"y{i}", T.FLOAT, None) for i in range(2)]
    model = finish(h.make_graph(nodes, "g", inputs, outputs))
    fake = FakeOrt(tamper={"c0_out0": lambda a: np.full_like(a, 5.0)}).install(monkeypatch)
    result = compare_loaded(model, EDGES)
    lone = [m for m in fake.sessions if m.graph.name == "sonnx-check node edges"]
    assert all(len(m.graph.node) == 1 for m in lone)
    configs = result.comparison["node_edges"]["configurations"]
    assert [[n["name"] for n in c["nodes"]] for c in configs] == [["relu0"], ["relu1"]]
    assert all(c["status"] == "diverges" for c in configs)
    assert [i["model_shape"] for c in configs for i in c["inputs"]] == [[1, 3, 56, 56], [1, 3, 66, 66]]
    found = {f.node.name for f in result.findings if f.rule == "RUNTIME.divergence"}
    assert found == {"relu0", "relu1"}
    assert {f.tensor for f in result.findings if f.rule == "RUNTIME.divergence"} == {"y0", "y1"}
