"""The ONNX backend test layout: written bit for bit without replacing anything, read strictly (each bad file
gives a typed problem with a one-line reason, limits checked before allocation)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare.inputs import backend_layout as bl
from sonnx_check.compare.inputs.backend_layout import Expected, Problem
from sonnx_check.errors import UsageError

DTYPES = [np.float32, np.float64, np.float16, np.bool_, np.int64, np.int32, np.int8, np.uint8, np.uint16]


def _model() -> onnx.ModelProto:
    graph = h.make_graph(
        [h.make_node("Add", ["a", "b"], ["y"])],
        "g",
        [h.make_tensor_value_info("a", T.FLOAT, [2]), h.make_tensor_value_info("b", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    array=st.sampled_from(DTYPES).flatmap(
        lambda dtype: hnp.arrays(
            dtype,
            hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
            elements=hnp.from_dtype(np.dtype(dtype)),
        )
    ),
    index=st.integers(0, 20),
)
def test_a_dataset_round_trips_bit_for_bit(
    tmp_path_factory: pytest.TempPathFactory, array: np.ndarray, index: int
):
    root = str(tmp_path_factory.mktemp("case"))
    folder = bl.write_dataset(root, index, [("x", array)], [("y", array)])
    assert os.path.basename(folder) == f"test_data_set_{index}"
    for read in (bl.read_inputs, bl.read_outputs):
        got = read(folder, [Expected("x", array.dtype, array.shape)], 10_000, 1 << 20).values[0]
        assert isinstance(got, np.ndarray)
        assert got.dtype == array.dtype and got.shape == array.shape and _bits(got) == _bits(array)


def test_special_float_values_keep_their_bits(tmp_path: Path):
    payload_nan = np.array([0x7FC00001, 0xFFC12345], np.uint32).view(np.float32)
    array = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32), payload_nan])
    half = np.array([0.0, -0.0, np.inf, np.nan, 6.1e-5], np.float16)
    folder = bl.write_dataset(str(tmp_path), 0, [("a", array), ("b", half)])
    a, b = bl.read_inputs(
        folder, [Expected("a", array.dtype, (7,)), Expected("b", half.dtype, (5,))], 100, 1000
    ).values
    assert _bits(a) == _bits(array) and _bits(b) == _bits(half)
    assert np.signbit(a[1]) and not np.signbit(a[0])


def test_files_follow_the_onnx_backend_test_naming(tmp_path: Path):
    """What onnx's own loader expects: model.onnx, test_data_set_N/input_K.pb named after the graph tensor."""
    with bl.new_folder(str(tmp_path / "suite")) as suite:
        case = bl.write_case(
            suite,
            "test_add",
            _model(),
            [
                bl.CaseData(
                    [("a", np.ones(2, np.float32)), ("b", np.ones(2, np.float32))],
                    [("y", np.full(2, 2, np.float32))],
                )
            ],
        )
    assert sorted(os.listdir(case)) == ["model.onnx", "test_data_set_0"]
    assert sorted(os.listdir(Path(case) / "test_data_set_0")) == ["input_0.pb", "input_1.pb", "output_0.pb"]
    tensor = onnx.load_tensor(str(Path(case) / "test_data_set_0" / "input_1.pb"))
    assert tensor.name == "b"
    assert onnx.load_tensor(str(Path(case) / "test_data_set_0" / "output_0.pb")).name == "y"
    assert onnx.load(str(Path(case) / "model.onnx")).graph.output[0].name == "y"


# -- never replacing anything ---------------------------------------------------------------------------


def test_a_non_empty_folder_is_refused_and_left_alone(tmp_path: Path):
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(bl.TargetNotEmpty, match="not empty"), bl.new_folder(str(tmp_path)):
        pass
    assert os.listdir(tmp_path) == ["mine.txt"]
    assert issubclass(bl.TargetNotEmpty, UsageError)


def test_an_empty_folder_and_a_new_nested_one_are_accepted(tmp_path: Path):
    with bl.new_folder(str(tmp_path)) as folder:
        folder.write_file("a.txt", b"1")
    with bl.new_folder(str(tmp_path / "x" / "y")) as folder:
        folder.write_file("b.txt", b"2")
    assert (tmp_path / "x" / "y" / "b.txt").read_bytes() == b"2"


@pytest.mark.parametrize("kind", ["link-to-empty-folder", "dangling-link", "file"])
def test_links_and_files_are_refused_as_the_folder(tmp_path: Path, kind: str):
    target = tmp_path / "target"
    if kind == "link-to-empty-folder":
        (tmp_path / "empty").mkdir()
        target.symlink_to(tmp_path / "empty")
    elif kind == "dangling-link":
        target.symlink_to(tmp_path / "nowhere")
    else:
        target.write_text("mine")
    with pytest.raises(bl.TargetNotEmpty), bl.new_folder(str(target)):
        pass
    assert not (tmp_path / "nowhere").exists()
    if kind == "file":
        assert target.read_text() == "mine"


def test_a_planted_link_inside_is_not_followed(tmp_path: Path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    with bl.new_folder(str(tmp_path / "out")) as folder:
        os.symlink(victim, tmp_path / "out" / "model.onnx")
        with pytest.raises(FileExistsError):
            folder.write_file("model.onnx", b"x")
        with pytest.raises(FileExistsError):
            folder.write_file("model.onnx", b"x")
    assert victim.read_text() == "keep"


def test_an_existing_dataset_folder_is_not_reused(tmp_path: Path):
    bl.write_dataset(str(tmp_path), 0, [("x", np.zeros(1, np.float32))])
    with pytest.raises(FileExistsError):
        bl.write_dataset(str(tmp_path), 0, [("x", np.ones(1, np.float32))])
    got = bl.read_inputs(
        str(tmp_path / "test_data_set_0"), [Expected("x", np.dtype(np.float32), (1,))], 10, 100
    )
    assert got.values[0][0] == 0


# -- strict reading ---------------------------------------------------------------------------------------

FLOAT2 = Expected("y", np.dtype(np.float32), (2,))


def _write(folder: Path, name: str, payload: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(payload)


def _tensor(array: np.ndarray, name: str = "y") -> bytes:
    return numpy_helper.from_array(array, name).SerializeToString()


def _external() -> bytes:
    tensor = numpy_helper.from_array(np.zeros(2, np.float32), "y")
    tensor.ClearField("raw_data")
    tensor.data_location = T.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "/etc/passwd"
    return tensor.SerializeToString()


def _huge_header() -> bytes:
    tensor = onnx.TensorProto(name="y", data_type=T.FLOAT, dims=[1 << 20, 1 << 20])
    return tensor.SerializeToString()


def _lying_header() -> bytes:
    tensor = numpy_helper.from_array(np.zeros(2, np.float32), "y")
    tensor.raw_data = b"\0" * 5
    return tensor.SerializeToString()


@pytest.mark.parametrize(
    ("payload", "kind", "reason"),
    [
        (None, Problem.MISSING, "output_0.pb (tensor 'y'): missing"),
        (
            b"\xff\xff\xff garbage",
            Problem.NOT_A_TENSOR,
            "output_0.pb (tensor 'y'): is not a serialised TensorProto",
        ),
        (_tensor(np.zeros(2, np.float64)), Problem.WRONG_TYPE, "holds double, expected float32"),
        (_tensor(np.zeros(3, np.float32)), Problem.WRONG_SHAPE, "has shape [3]: 3 at axis 0, expected 2"),
        (_tensor(np.zeros((2, 1), np.float32)), Problem.WRONG_SHAPE, "(rank 2), expected rank 1"),
        (_huge_header(), Problem.TOO_LARGE, "declares 1099511627776 elements, more than the limit 1000"),
        (b"\0" * 5000, Problem.TOO_LARGE, "is 5000 bytes, more than the limit 4096"),
        (_external(), Problem.EXTERNAL_DATA, "refers to external data in another file (refused)"),
        (_lying_header(), Problem.UNDECODABLE, "data does not match its header"),
    ],
)
def test_each_bad_output_file_has_its_reason(tmp_path: Path, payload, kind: Problem, reason: str):
    folder = tmp_path / "test_data_set_0"
    folder.mkdir()
    if payload is not None:
        _write(folder, "output_0.pb", payload)
    reading = bl.read_outputs(str(folder), [FLOAT2], max_elements=1000, max_bytes=4096)
    (problem,) = reading.values
    assert isinstance(problem, bl.FileProblem)
    assert problem.kind is kind and problem.name == "y"
    assert reason in problem.reason and "\n" not in problem.reason
    assert reading.problems == (problem,)


def test_the_declared_size_is_checked_before_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _write(tmp_path, "output_0.pb", _huge_header())

    def refuse(*args, **kwargs):
        raise AssertionError("decoded before the size check")

    monkeypatch.setattr(numpy_helper, "to_array", refuse)
    (problem,) = bl.read_outputs(str(tmp_path), [FLOAT2], 1000, 1 << 20).values
    assert problem.kind is Problem.TOO_LARGE


def test_a_link_and_a_folder_in_place_of_a_file_are_unreadable(tmp_path: Path):
    secret = tmp_path / "secret.pb"
    secret.write_bytes(_tensor(np.zeros(2, np.float32)))
    (tmp_path / "output_0.pb").symlink_to(secret)
    (tmp_path / "output_1.pb").mkdir()
    first, second = bl.read_outputs(str(tmp_path), [FLOAT2, FLOAT2], 100, 1000).values
    assert first.kind is Problem.UNREADABLE and "symbolic link" in first.reason
    assert second.kind is Problem.UNREADABLE


def test_good_outputs_are_read_extra_files_listed_and_names_sanitised(tmp_path: Path):
    _write(tmp_path, "output_0.pb", _tensor(np.array([1, 2], np.float32)))
    _write(tmp_path, "output_1.pb", b"junk")
    _write(tmp_path, "notes\x1b[31m.txt", b"")
    evil = Expected("z\x1b]8;;\n", np.dtype(np.float32), (2,))
    reading = bl.read_outputs(str(tmp_path), [FLOAT2, evil], 100, 1000)
    good, bad = reading.values
    assert good.tolist() == [1.0, 2.0]
    assert "\x1b" not in bad.reason and "\n" not in bad.reason and "\\x1b" in bad.reason
    assert reading.unexpected == ("notes\\x1b[31m.txt",)


def test_unknown_dims_and_rank_accept_any_size(tmp_path: Path):
    _write(tmp_path, "output_0.pb", _tensor(np.zeros((3, 5), np.float32)))
    for shape in (None, (None, 5), (3, None)):
        (value,) = bl.read_outputs(
            str(tmp_path), [Expected("y", np.dtype(np.float32), shape)], 100, 1000
        ).values
        assert value.shape == (3, 5)


def test_dataset_folders_in_numeric_order(tmp_path: Path):
    for n in (10, 2, 0):
        (tmp_path / f"test_data_set_{n}").mkdir()
    (tmp_path / "test_data_set_x").mkdir()
    assert [os.path.basename(p) for p in bl.dataset_folders(str(tmp_path))] == [
        "test_data_set_0",
        "test_data_set_2",
        "test_data_set_10",
    ]


def test_expected_of_a_graph_output():
    model = _model()
    assert bl.expected_of(model.graph.output[0]) == Expected("y", np.dtype(np.float32), (2,))
    dynamic = h.make_tensor_value_info("z", T.INT64, ["N", 3])
    assert bl.expected_of(dynamic) == Expected("z", np.dtype(np.int64), (None, 3))
    assert bl.expected_of(h.make_tensor_value_info("r", T.BOOL, None)).shape is None


def test_a_users_input_file_may_be_a_link_a_runtimes_output_may_not(tmp_path: Path):
    real = tmp_path / "real.pb"
    real.write_bytes(_tensor(np.zeros(2, np.float32)))
    (tmp_path / "input_0.pb").symlink_to(real)
    assert isinstance(
        bl.parse_tensor_file(str(tmp_path / "input_0.pb"), None, follow_links=True), onnx.TensorProto
    )
    assert bl.parse_tensor_file(str(tmp_path / "input_0.pb"), None).kind is Problem.UNREADABLE


def test_expectations_may_be_plain_tuples(tmp_path: Path):
    _write(tmp_path, "output_0.pb", _tensor(np.array([1, 2], np.float32)))
    (value,) = bl.read_outputs(str(tmp_path), [("y", np.float32, (2,))], 100, 1000).values
    assert value.tolist() == [1.0, 2.0]
