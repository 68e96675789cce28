"""Strings that are not UTF-8 inside a model: ONNX forbids them, protobuf parses them anyway."""

from __future__ import annotations

from pathlib import Path


def test_operator_name_that_is_not_utf8_is_a_load_error(tmp_path: Path) -> None:
    """Protobuf hands invalid UTF-8 in a string field back as bytes; no check may crash on it."""
    from onnx import TensorProto as T
    from onnx import helper as h

    from sonnx_check.engine import check_file

    node = h.make_node("Relu", ["x"], ["y"], name="r", domain="")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)]).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data.replace(b"Relu", b"Re\xffu"))
    result = check_file(str(path))
    assert result.load_error
    (finding,) = result.findings
    assert finding.rule == "MODEL.load" and "node #0's op_type is not UTF-8 text" in finding.message


def test_subgraph_attribute_name_that_is_not_utf8_is_reported_not_a_crash(tmp_path: Path) -> None:
    """Found by the fuzzer: an If whose branch attribute's name is not text crashed GRAPH.control-flow."""
    from onnx import TensorProto as T
    from onnx import helper as h

    from sonnx_check.engine import check_file

    branch = h.make_graph([], "b", [], [h.make_tensor_value_info("x", T.FLOAT, [2])])
    node = h.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=branch)
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)]).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data.replace(b"else_branch", b"\xfflse_branch"))
    result = check_file(str(path))
    [finding] = [f for f in result.findings if f.rule == "GRAPH.control-flow"]
    assert (
        "subgraph attributes: \\xfflse_branch, then_branch" in finding.message or "\udcff" in finding.message
    )


def test_dimension_name_that_is_not_utf8_is_reported_not_a_crash(tmp_path: Path) -> None:
    """Found by the fuzzer: a dim_param that is not text crashed GRAPH.shapes (bytes compared with 0)."""
    from onnx import TensorProto as T
    from onnx import helper as h

    from sonnx_check.engine import check_file

    node = h.make_node("Relu", ["x"], ["y"], name="r")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", 2])],
        [h.make_tensor_value_info("y", T.FLOAT, ["batch", 2])],
    )
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)]).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data.replace(b"batch", b"\xffatch"))
    result = check_file(str(path))
    shapes = [f for f in result.findings if f.rule == "GRAPH.shapes"]
    assert shapes and all(
        "symbolic dimension '\\xffatch'" in f.message or "\udcff" in f.message for f in shapes
    )
