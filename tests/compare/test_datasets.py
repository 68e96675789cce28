"""Input datasets: reproducible random data, edge values, --shape handling, user files, the size budget."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from models import finish, maxpool
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare.inputs import datasets as ds
from sonnx_check.compare.inputs.datasets import build_datasets
from sonnx_check.compare.inputs.specs import InputBudgetExceeded, input_specs
from sonnx_check.errors import UsageError

BIG = 100_000_000


def two_input_model(x_dims=(1, 1, 4, 4), dtype=T.FLOAT, with_initializer: bool = False) -> onnx.ModelProto:
    node = h.make_node("Max", ["x", "w"], ["y"], name="m")
    inputs = [
        h.make_tensor_value_info("x", dtype, list(x_dims)),
        h.make_tensor_value_info("w", dtype, [1, 1, 4, 4]),
    ]
    inits = [numpy_helper.from_array(np.ones((1, 1, 4, 4), np.float32), "w")] if with_initializer else []
    graph = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("y", dtype, None)], initializer=inits)
    return finish(graph, 13)


def build(model: onnx.ModelProto, sources=("random", "edge"), seed=0, shapes=None, max_elements=BIG):
    specs = input_specs(model, shapes or {})
    return build_datasets(
        sources, specs, seed=seed, max_elements=max_elements, feedable=[v.name for v in model.graph.input]
    )


# -- random -----------------------------------------------------------------------------------------------


def test_random_data_is_reproducible_for_a_seed_and_changes_with_it():
    model = two_input_model()
    first = build(model, ("random",), seed=7)[0].feeds
    again = build(model, ("random",), seed=7)[0].feeds
    other = build(model, ("random",), seed=8)[0].feeds
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not np.array_equal(first["x"], other["x"])


def test_an_inputs_random_data_does_not_depend_on_the_other_inputs():
    alone = build(maxpool((1, 1, 4, 4), x_name="x"), ("random",), seed=3)[0].feeds["x"]
    with_other = build(two_input_model(), ("random",), seed=3)[0].feeds["x"]
    assert np.array_equal(alone, with_other)


def test_random_floats_are_symmetric_within_ten_and_hold_exact_ties():
    x = build(maxpool((1, 1, 32, 32), x_name="x"), ("random",))[0].feeds["x"]
    assert x.dtype == np.float32
    assert x.min() >= -10 and x.max() <= 10
    assert x.min() < -5 and x.max() > 5
    assert len(np.unique(x)) < x.size  # planted ties


def test_random_integers_cover_the_full_range_of_the_type():
    x = build(maxpool((1, 1, 32, 32), np.int8, x_name="x"), ("random",))[0].feeds["x"]
    assert x.dtype == np.int8
    assert x.min() < -100 and x.max() > 100
    wide = build(maxpool((1, 1, 16, 16), np.int64, x_name="x"), ("random",))[0].feeds["x"]
    assert np.abs(wide.astype(np.float64)).max() > 2.0**40


# -- edge -------------------------------------------------------------------------------------------------


def test_edge_float_datasets_hold_every_special_value():
    sets = build(maxpool((1, 1, 8, 8), x_name="x"), ("edge",))
    names = [d.name for d in sets]
    allx = np.concatenate([d.feeds["x"].reshape(-1) for d in sets])
    info = np.finfo(np.float32)
    assert np.isnan(allx).any()
    assert np.isposinf(allx).any() and np.isneginf(allx).any()
    zeros = allx[allx == 0]
    assert np.signbit(zeros).any() and (~np.signbit(zeros)).any()
    assert (allx == info.min).any() and (allx == info.max).any()
    assert ((allx != 0) & (np.abs(allx) < info.tiny)).any()  # subnormals
    by_name = {d.name: d.feeds["x"] for d in sets}
    assert np.isneginf(by_name["edge/neg-inf"]).all()
    assert np.isnan(by_name["edge/nan"]).all()
    assert (by_name["edge/lowest"] == info.min).all()
    assert np.array_equal(np.signbit(by_name["edge/signed-zeros"].reshape(-1)[:2]), [False, True])
    board = by_name["edge/tie-checkerboard"][0, 0]
    assert board[0, 0] == board[1, 1] == board[0, 2] != board[0, 1]
    sparse = by_name["edge/neg-inf-sparse"]
    assert np.isneginf(sparse).mean() > 0.7 and np.isfinite(sparse).any()
    assert names == sorted(set(names), key=names.index)  # no duplicate dataset


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int64])
def test_the_mixture_holds_every_special_even_in_a_small_tensor(dtype):
    sets = build(maxpool((1, 1, 4, 4), dtype, x_name="x"), ("edge",))
    mix = next(d.feeds["x"] for d in sets if d.name == "edge/specials-mix")
    specials = ds._specials(np.dtype(dtype))
    for value in specials:
        if np.isnan(value):
            assert np.isnan(mix).any()
        elif value == 0 and np.dtype(dtype).kind == "f":
            assert ((mix == 0) & (np.signbit(mix) == np.signbit(value))).any()
        else:
            assert (mix == value).any(), value


def test_edge_datasets_are_deterministic():
    model = maxpool((1, 1, 8, 8), x_name="x")
    a, b = build(model, ("edge",)), build(model, ("edge",))
    for one, two in zip(a, b, strict=True):
        assert np.array_equal(one.feeds["x"], two.feeds["x"], equal_nan=True)


def test_edge_integer_datasets_hold_the_extremes():
    sets = build(maxpool((1, 1, 6, 6), np.uint8, x_name="x"), ("edge",))
    allx = np.concatenate([d.feeds["x"].reshape(-1) for d in sets])
    assert allx.min() == 0 and allx.max() == 255
    by_name = {d.name: d.feeds["x"] for d in sets}
    assert (by_name["edge/lowest"] == 0).all()


def test_every_edge_dataset_feeds_every_input_even_of_different_types():
    node = h.make_node("Max", ["x"], ["y"], name="m")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [4]), h.make_tensor_value_info("k", T.INT32, [3])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    sets = build(finish(graph, 13), ("edge",))
    assert all(set(d.feeds) == {"x", "k"} for d in sets)
    assert {d.feeds["k"].dtype for d in sets} == {np.dtype(np.int32)}


# -- which inputs, which shapes ------------------------------------------------------------------------------


def test_inputs_backed_by_an_initializer_need_no_data():
    specs = input_specs(two_input_model(with_initializer=True))
    assert [s.name for s in specs] == ["x"]


def test_a_non_static_dimension_needs_a_shape_naming_input_and_dim():
    model = maxpool(("batch", 3, 224, 224), x_name="x")
    with pytest.raises(UsageError) as err:
        build(model)
    assert (
        str(err.value) == "input 'x' has a non-static dimension 'batch' (axis 0): give --shape x=1,3,224,224"
    )


def test_an_unnamed_dimension_and_a_missing_shape_are_explained_too():
    model = maxpool((1, 1, 4, 4), x_name="x")
    model.graph.input[0].type.tensor_type.shape.dim[2].Clear()
    with pytest.raises(
        UsageError, match=r"an unnamed non-static dimension \(axis 2\): give --shape x=1,1,1,4"
    ):
        build(model)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(UsageError, match="input 'x' has no declared shape"):
        build(model)


def test_shape_option_fills_the_dynamic_dims():
    model = maxpool(("batch", 3, "h", "w"), x_name="x")
    sets = build(model, ("random",), shapes={"x": (2, 3, 5, 6)})
    assert sets[0].feeds["x"].shape == (2, 3, 5, 6)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((2, 4, 5, 6), "gives 4 at axis 1; input 'x' declares the static dimension 3 there"),
        ((2, 3, 5), "has rank 3; input 'x' is declared with rank 4"),
    ],
)
def test_shape_option_must_agree_with_the_declared_shape(shape, message):
    with pytest.raises(UsageError, match=message):
        build(maxpool(("batch", 3, 5, 6), x_name="x"), shapes={"x": shape})


def test_shape_option_for_an_unknown_input_is_refused():
    with pytest.raises(UsageError, match=r"--shape names 'y', not an input .*\(inputs: 'x'\)"):
        build(maxpool((1, 1, 4, 4), x_name="x"), shapes={"y": (1,)})


def test_a_model_without_inputs_gets_a_single_dataset():
    const = h.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones(3, np.float32)))
    graph = h.make_graph([const], "g", [], [h.make_tensor_value_info("c", T.FLOAT, [3])])
    sets = build(finish(graph))
    assert [d.name for d in sets] == ["no-inputs"]


# -- budget -----------------------------------------------------------------------------------------------


def test_generated_inputs_over_the_budget_are_refused_before_allocation():
    model = maxpool((100_000, 100_000, 100, 100), x_name="x")  # 1e14 elements: allocating would fail loudly
    with pytest.raises(
        InputBudgetExceeded, match=r"input 'x' has 100000000000000 elements .* --max-elements"
    ):
        build(model, max_elements=1000)


def test_npz_over_the_budget_is_refused_from_its_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "big.npz"
    np.savez(path, x=np.zeros((1, 1, 8, 8), np.float32))

    def no_load(*args, **kwargs):
        raise AssertionError("the array was loaded before the budget check")

    monkeypatch.setattr(ds.np, "load", no_load)
    with pytest.raises(InputBudgetExceeded, match="input 'x' in .*big.npz has 64 elements"):
        build(maxpool((1, 1, 8, 8), x_name="x"), (str(path),), max_elements=10)


# -- user files -------------------------------------------------------------------------------------------


def test_npz_keyed_by_input_name(tmp_path: Path):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.savez(tmp_path / "in.npz", x=x)
    sets = build(maxpool((1, 1, 4, 4), x_name="x"), (str(tmp_path / "in.npz"),))
    assert len(sets) == 1 and np.array_equal(sets[0].feeds["x"], x)


def test_npz_may_define_a_dynamic_dimension_without_shape_option(tmp_path: Path):
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 1, 4, 4), np.float32))
    sets = build(maxpool(("batch", 1, 4, 4), x_name="x"), (str(tmp_path / "in.npz"),))
    assert sets[0].feeds["x"].shape == (2, 1, 4, 4)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({}, "no data for input 'x'"),
        ({"x": np.zeros((1, 1, 4, 4), np.float64)}, "input 'x' is float64, the model declares float"),
        (
            {"x": np.zeros((1, 1, 4, 5), np.float32)},
            "input 'x' has 5 at axis 3, the input is declared with 4",
        ),
        ({"x": np.zeros((1, 1, 4, 4), np.float32), "z": np.zeros(1)}, "'z' is not an input of the model"),
    ],
)
def test_npz_that_does_not_fit_the_model_is_a_usage_error(tmp_path: Path, arrays, message):
    np.savez(tmp_path / "in.npz", **arrays)
    with pytest.raises(UsageError, match=message):
        build(maxpool((1, 1, 4, 4), x_name="x"), (str(tmp_path / "in.npz"),))


def _write_pb(folder: Path, index: int, array: np.ndarray, name: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tensor = numpy_helper.from_array(array, name)
    (folder / f"input_{index}.pb").write_bytes(tensor.SerializeToString())


def test_test_data_set_folders_by_name_and_in_numeric_order(tmp_path: Path):
    for n in (0, 2, 10):
        _write_pb(tmp_path / f"test_data_set_{n}", 0, np.full((1, 1, 4, 4), n, np.float32), name="x")
    sets = build(maxpool((1, 1, 4, 4), x_name="x"), (str(tmp_path),))
    assert [d.name.rsplit("_", 1)[1] for d in sets] == ["0", "2", "10"]
    assert [float(d.feeds["x"][0, 0, 0, 0]) for d in sets] == [0.0, 2.0, 10.0]


def test_test_data_set_tensors_without_matching_names_are_positional(tmp_path: Path):
    folder = tmp_path / "test_data_set_0"
    _write_pb(folder, 0, np.zeros((1, 1, 4, 4), np.float32), name="")
    _write_pb(folder, 1, np.ones((1, 1, 4, 4), np.float32), name="unrelated")
    sets = build(two_input_model(), (str(folder),))
    assert sets[0].feeds["x"].sum() == 0 and sets[0].feeds["w"].sum() == 16


def test_a_folder_without_test_data_is_refused(tmp_path: Path):
    with pytest.raises(UsageError, match="neither input_N.pb files nor test_data_set_N folders"):
        build(maxpool((1, 1, 4, 4), x_name="x"), (str(tmp_path),))


@pytest.mark.parametrize("source", ["nowhere.npz", "data.csv"])
def test_unknown_sources_are_refused(tmp_path: Path, source: str):
    if source.endswith(".csv"):
        (tmp_path / source).write_text("1,2")
    with pytest.raises(UsageError, match="--inputs"):
        build(maxpool((1, 1, 4, 4), x_name="x"), (str(tmp_path / source),))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\xff\xff garbage", r"input_0.pb: is not a serialised TensorProto"),
        ("external", r"input_0.pb: refers to external data in another file \(refused\)"),
    ],
)
def test_a_bad_input_file_is_one_usage_line(tmp_path: Path, payload, message: str):
    folder = tmp_path / "test_data_set_0"
    folder.mkdir()
    if payload == "external":
        tensor = numpy_helper.from_array(np.zeros((1, 1, 4, 4), np.float32), "x")
        tensor.ClearField("raw_data")
        tensor.data_location = T.EXTERNAL
        tensor.external_data.add(key="location", value="/etc/passwd")
        payload = tensor.SerializeToString()
    (folder / "input_0.pb").write_bytes(payload)
    with pytest.raises(UsageError, match=message):
        build(maxpool((1, 1, 4, 4), x_name="x"), (str(folder),))


def test_an_input_file_over_the_budget_is_refused_from_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    _write_pb(tmp_path, 0, np.zeros((1, 1, 8, 8), np.float32), name="x")
    monkeypatch.setattr(
        numpy_helper, "to_array", lambda *a, **k: (_ for _ in ()).throw(AssertionError("decoded"))
    )
    with pytest.raises(InputBudgetExceeded, match="more than --max-elements 10"):
        build(maxpool((1, 1, 8, 8), x_name="x"), (str(tmp_path),), max_elements=10)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([np.float16, np.float32, np.float64]),
    st.lists(st.integers(0, 9), max_size=3).map(tuple),
    st.integers(0, 2**32 - 1),
)
def test_subnormal_edge_data_are_the_steps_times_the_smallest_subnormal(dtype, shape, seed) -> None:
    """The subnormals pattern, its bits set directly (issue 21: no subnormal arithmetic), is what its
    formula says, value for value and sign for sign: steps 1..7 drawn first, then the signs."""
    values = ds.edge_array("subnormals", np.dtype(dtype), shape, np.random.default_rng(seed))
    rng = np.random.default_rng(seed)
    size = math.prod(shape)
    steps = rng.integers(1, 8, size=size).astype(np.float64)
    signs = np.where(rng.random(size=size) < 0.5, -1.0, 1.0)
    expected = (steps * float(np.finfo(dtype).smallest_subnormal) * signs).astype(dtype).reshape(shape)
    assert values.dtype == dtype and values.shape == shape
    assert np.array_equal(values, expected) and np.array_equal(np.signbit(values), np.signbit(expected))


_BLEND_TYPES = ["float32", "float64", "float16", "int8", "uint16", "int32", "uint64", "bool"]


@given(
    st.sampled_from(_BLEND_TYPES),
    st.lists(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -3.0, 1e-45, 255.0]), max_size=50),
    st.data(),
)
@settings(max_examples=200, deadline=None)
def test_putting_specials_where_chosen_keeps_every_bit(name: str, raw: list[float], data) -> None:
    """specials-mix's blend (``_put_where``: integer masking) against np.copyto(where=): the same bits,
    NaN payloads and signed zeros included."""
    dtype = np.dtype(name)
    with np.errstate(invalid="ignore", over="ignore"):
        target = np.array(raw, dtype=np.float64).astype(dtype)
        values = np.array(raw[::-1], dtype=np.float64).astype(dtype)
    if dtype.kind == "f" and target.size:
        target.view(f"u{dtype.itemsize}")[0] |= 1  # a NaN with a payload, or an odd last bit
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=target.size, max_size=target.size)), bool)
    expected = target.copy()
    np.copyto(expected, values, where=mask)
    ds._put_where(target, values.copy(), mask)
    assert target.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", [*_BLEND_TYPES, "int64", "uint8"])
def test_specials_mix_is_the_plain_formulation(name: str) -> None:
    """The mix drawn as ``part[chosen] = specials[picks][chosen]``, chunk boundaries included."""
    dtype = np.dtype(name)
    shape = (3, ds._CHUNK // 3 + 5)
    rng = np.random.default_rng([5, 6])
    specials = ds._specials(dtype)
    picks = rng.integers(0, specials.size, size=math.prod(shape)).astype(np.uint8)
    values = ds.random_array(dtype, shape, rng)
    flat = values.reshape(-1)
    for start in range(0, flat.size, ds._CHUNK):
        part = flat[start : start + ds._CHUNK]
        chosen = rng.random(size=part.size) < 0.5
        part[chosen] = specials[picks[start : start + part.size]][chosen]
    flat[rng.choice(flat.size, size=specials.size, replace=False)] = specials
    assert ds._mix(dtype, shape, np.random.default_rng([5, 6])).tobytes() == values.tobytes()
