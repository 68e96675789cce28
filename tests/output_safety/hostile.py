"""The hostile-string corpus of issue 12: models whose names, types, domains and external-data locations
try to reach a terminal, a CI log, rich markup or a report consumer."""

from __future__ import annotations

from pathlib import Path

import onnx
from clikit import conforming_maxpool, maxpool_r2, save
from onnx import TensorProto as T
from onnx import helper as h

MEGABYTE = 1_000_000

# node name -> what it tries
NAMES = {
    "inject": "pool\n::add-mask::error\n::warning file=x.onnx::forged",
    "carriage": "pool\r::error::forged",
    "escape": "p\x1b[2K\r(checked: nothing to report)\x1b[8m",
    "osc": "p\x1b]8;;https://evil.example/\x1b\\trusted\x1b]8;;\x1b\\",
    "c1": "p\x9b2K\x85next",
    "bidi": "pool\u202eevil\u2066x\u2069\u200e",
    "separators": "a\u2028b\u2029c\ufeffd\u200be",
    "link": "[link=https://evil.example/]trusted[/link]",
    "close": "pool[/]",
    "markup": "[bold red]fake[/bold red] :smile:",
    "nul": "a\x00b",
    "big": "A" * MEGABYTE,
}


def _with_bytes(model: onnx.ModelProto, old: bytes, new: bytes, path: Path) -> Path:
    """Protobuf refuses to serialise invalid UTF-8, so the bytes are patched in after serialisation."""
    data = model.SerializeToString()
    assert data.count(old) == 1, old
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.replace(old, new))
    return path


def _external(location: str) -> onnx.ModelProto:
    weight = h.make_tensor("w", T.FLOAT, [1], [1.0])
    weight.data_location = T.EXTERNAL
    del weight.float_data[:]
    entry = weight.external_data.add()
    entry.key, entry.value = "location", location
    model = conforming_maxpool()
    model.graph.initializer.append(weight)
    return model


def corpus(folder: Path) -> dict[str, Path]:
    """Every case as a model file under ``folder``."""
    models = {case: save(maxpool_r2(name), folder / f"{case}.onnx") for case, name in NAMES.items()}
    optype = conforming_maxpool()
    optype.graph.node[0].op_type = "ZZZZ"
    models["optype_utf8"] = _with_bytes(optype, b"ZZZZ", b"Z\xffZ\x1b", folder / "optype_utf8.onnx")
    models["optype_nul"] = _with_bytes(optype, b"ZZZZ", b"Z\x00Z\n", folder / "optype_nul.onnx")
    domain = conforming_maxpool()
    domain.graph.node[0].domain = "QQQQ"
    models["domain_utf8"] = _with_bytes(domain, b"QQQQ", b"Q\xff\nQ", folder / "domain_utf8.onnx")
    models["location_nul"] = _with_bytes(
        _external("LOCX"), b"LOCX", b"L\x00C\n", folder / "location_nul.onnx"
    )
    models["location_utf8"] = _with_bytes(
        _external("LOCX"), b"LOCX", b"L\xffCX", folder / "location_utf8.onnx"
    )
    return models
