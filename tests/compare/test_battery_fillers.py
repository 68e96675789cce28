"""The edge battery's fillers (compare/edges/fillers.py): a configuration that a dataset of its batch does
not concern is fed the data of its own first dataset the reference accepts. That data is the battery's own
preparation of the dataset, taken as it goes: the reference runs each configuration once per dataset (it
ran the first one again for the filler, a tenth of EfficientNet-b0's battery), and the verdicts are those
of the data it was fed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_battery_isolation import relu_softmax

from sonnx_check import reference
from sonnx_check.cli import main
from sonnx_check.compare.edges import fillers


def test_each_configuration_meets_the_reference_once_per_dataset(tmp_path: Path) -> None:
    model = relu_softmax(tmp_path / "relu_softmax.onnx")
    runs: Counter[tuple[str, bytes]] = Counter()
    fed: list[tuple[str, bytes]] = []
    original_run, original_value = reference.run_node_with_abs, fillers.Fillers.value

    def counted(node, inputs, **kwargs):  # type: ignore[no-untyped-def]
        runs[node.op_type, np.asarray(inputs[0]).tobytes()] += 1
        return original_run(node, inputs, **kwargs)

    def filler(self, config, shape, dtype, position):  # type: ignore[no-untyped-def]
        value = original_value(self, config, shape, dtype, position)
        fed.append((config.op_type, value.tobytes()))
        return value

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference, "run_node_with_abs", counted)
        patch.setattr(fillers.Fillers, "value", filler)
        result = CliRunner().invoke(main, ["--isolated", "--format", "json", "--compare", str(model)])
    report = json.loads(result.stdout)["models"][0]
    configs = {c["op_type"]: c for c in report["comparison"]["node_edges"]["configurations"]}
    assert configs["Relu"]["status"] == "match"
    assert fed and {op for op, _ in fed} == {"Relu"}  # Softmax's own datasets concern Relu not
    # its first dataset's data (edge/neg-inf, which the reference accepts), as the battery prepared it
    assert all((np.frombuffer(data, np.float32) == -np.inf).all() for _, data in fed)
    assert runs["Relu", fed[0][1]] == 1
    assert [key for key, count in runs.items() if count > 1] == []
