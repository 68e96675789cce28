"""A mutation fuzzer for sonnx-check: mutate fields of real models, run the whole command, expect no bug.

Each case starts from one of the seed models (the committed samples and two exporter outputs), applies a few
random mutations to the protobuf (drop or retype attributes, change values, dims and element types, rewire
inputs, duplicate names, delete or clone nodes, change operators, opsets and domains, damage weights; and the
hostile shapes of hostile_mutations.py: strings that are not text in any string field, model-local
functions, external data with any entries and files up to a sparse 1 GiB), writes it, and runs
``sonnx-check --compare`` on it. A run may report anything about the model; it must not end in an
internal error (exit 3) or show a traceback.

The test suite runs a bounded number of cases through hypothesis (tests/robustness/test_fuzz.py). A longer
run, reproducible from its seed:

    python tests/robustness/fuzz.py --cases 2000 --seed 1
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
from click.testing import CliRunner
from onnx import AttributeProto as A
from onnx import TensorProto as T

from sonnx_check.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_mutations import HOSTILE_MUTATIONS, PENDING  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
# Small budgets: a mutated dim can ask for anything, and the fuzzer is about bugs, not about sizes.
# --timeout: a mutation can make onnx's checker slow (a function calling itself); the fuzzer is about bugs.
COMMAND = ["--format", "json", "--compare", "--inputs", "random", "--max-elements", "200000", "--isolated"]
COMMAND += ["--timeout", "30"]
_DIMS = (0, 1, 2, 3, 7, -1, -8, 2**31, 2**40)
_INT_VALUES = (0, 1, 2, 3, -1, -5, 100, 2**31, -(2**62))
_OPS = ("Max", "MaxPool", "Relu", "Conv", "Identity", "Loop", "NoSuchOp", "Flatten", "Gemm")
_ELEM_TYPES = tuple(range(0, 27))


def seed_models() -> list[Path]:
    """Every committed sample that parses as a model (a mutation of garbage is just garbage)."""
    paths = []
    for path in sorted(SAMPLES.rglob("*.onnx")):
        try:
            onnx.load(str(path), load_external_data=False)
        except Exception:  # noqa: BLE001 - the deliberately invalid samples
            continue
        paths.append(path)
    return paths


Mutation = Callable[[onnx.ModelProto, random.Random], bool]  # False: nothing to mutate there


def _pick_node(model: onnx.ModelProto, rng: random.Random) -> onnx.NodeProto | None:
    return rng.choice(model.graph.node) if model.graph.node else None


def _tensor_names(model: onnx.ModelProto) -> list[str]:
    g = model.graph
    names = [v.name for v in (*g.input, *g.output, *g.value_info)] + [t.name for t in g.initializer]
    return sorted({*names, *(o for n in g.node for o in n.output)})


def _value_infos(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    g = model.graph
    return [*g.input, *g.output, *g.value_info]


def drop_attribute(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    if node is None or not node.attribute:
        return False
    del node.attribute[rng.randrange(len(node.attribute))]
    return True


def retype_attribute(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    if node is None or not node.attribute:
        return False
    attribute = rng.choice(node.attribute)
    kind = rng.choice((A.INT, A.INTS, A.FLOAT, A.FLOATS, A.STRING, A.STRINGS, A.TENSOR, A.GRAPH))
    for field in ("i", "f", "s", "ints", "floats", "strings", "t", "g"):
        attribute.ClearField(field)
    attribute.type = kind
    if kind == A.INT:
        attribute.i = rng.choice(_INT_VALUES)
    elif kind == A.INTS:
        attribute.ints.extend(rng.choice(_INT_VALUES) for _ in range(rng.randrange(0, 6)))
    elif kind == A.FLOAT:
        attribute.f = rng.choice((0.0, -1.5, float("nan"), float("inf")))
    elif kind == A.STRING:
        attribute.s = rng.choice((b"NOTSET", b"SAME_UPPER", b"BOGUS", b"\xff\xfe"))
    elif kind == A.TENSOR:
        attribute.t.CopyFrom(onnx.helper.make_tensor("t", T.FLOAT, [2], [1.0, 2.0]))
    elif kind == A.GRAPH:
        attribute.g.CopyFrom(onnx.helper.make_graph([], "empty", [], []))
    return True


def change_attribute_value(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    ints = [a for a in node.attribute if a.type in (A.INT, A.INTS)] if node is not None else []
    if not ints:
        return False
    attribute = rng.choice(ints)
    if attribute.type == A.INT:
        attribute.i = rng.choice(_INT_VALUES)
    else:
        del attribute.ints[:]
        attribute.ints.extend(rng.choice(_INT_VALUES) for _ in range(rng.randrange(0, 7)))
    return True


def change_dim(model: onnx.ModelProto, rng: random.Random) -> bool:
    infos = [v for v in _value_infos(model) if v.type.tensor_type.shape.dim]
    if not infos:
        return False
    dims = rng.choice(infos).type.tensor_type.shape.dim
    dim = dims[rng.randrange(len(dims))]
    choice = rng.randrange(4)
    if choice == 0:
        dim.dim_param = rng.choice(("N", "", "batch"))
    elif choice == 1:
        dim.Clear()
    else:
        dim.dim_value = rng.choice(_DIMS)
    return True


def change_rank(model: onnx.ModelProto, rng: random.Random) -> bool:
    infos = [v for v in _value_infos(model) if v.type.HasField("tensor_type")]
    if not infos:
        return False
    shape = rng.choice(infos).type.tensor_type.shape
    if shape.dim and rng.random() < 0.5:
        del shape.dim[rng.randrange(len(shape.dim))]
    else:
        shape.dim.add().dim_value = rng.choice(_DIMS[:5])
    return True


def change_elem_type(model: onnx.ModelProto, rng: random.Random) -> bool:
    if model.graph.initializer and rng.random() < 0.3:
        rng.choice(model.graph.initializer).data_type = rng.choice(_ELEM_TYPES)
        return True
    infos = [v for v in _value_infos(model) if v.type.HasField("tensor_type")]
    if not infos:
        return False
    rng.choice(infos).type.tensor_type.elem_type = rng.choice(_ELEM_TYPES)
    return True


def rewire_input(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    if node is None:
        return False
    target = rng.choice([*_tensor_names(model), "", "nobody"])
    if node.input and rng.random() < 0.8:
        node.input[rng.randrange(len(node.input))] = target
    else:
        node.input.append(target)
    return True


def duplicate_name(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    names = _tensor_names(model)
    if node is None or not node.output or not names:
        return False
    node.output[rng.randrange(len(node.output))] = rng.choice(names)
    return True


def delete_node(model: onnx.ModelProto, rng: random.Random) -> bool:
    if not model.graph.node:
        return False
    del model.graph.node[rng.randrange(len(model.graph.node))]
    return True


def clone_node(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    if node is None:
        return False
    model.graph.node.insert(rng.randrange(len(model.graph.node) + 1), node)
    return True


def change_operator(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    if node is None:
        return False
    node.op_type = rng.choice(_OPS)
    return True


def change_opset(model: onnx.ModelProto, rng: random.Random) -> bool:
    if not model.opset_import:
        return False
    imported = rng.choice(model.opset_import)
    imported.version = rng.choice(
        (1, 7, 8, 10, 11, 12, 13, 20, 22, onnx.defs.onnx_opset_version() + 1, 10_000)
    )
    if rng.random() < 0.2:
        model.ir_version = rng.choice((0, 3, 7, 10, 99))
    return True


def change_domain(model: onnx.ModelProto, rng: random.Random) -> bool:
    node = _pick_node(model, rng)
    if node is None:
        return False
    node.domain = rng.choice(("ai.onnx", "com.example", "ai.onnx.ml", "com.microsoft"))
    return True


def damage_weights(model: onnx.ModelProto, rng: random.Random) -> bool:
    if not model.graph.initializer:
        return False
    tensor = rng.choice(model.graph.initializer)
    if tensor.data_location == T.EXTERNAL:
        entry = rng.choice(tensor.external_data) if tensor.external_data else tensor.external_data.add()
        entry.key = rng.choice(("location", "offset", "length", "checksum"))
        entry.value = rng.choice(("../../etc/passwd", "/etc/passwd", "-5", "99999999999", "", "x.bin"))
    elif tensor.raw_data:
        tensor.raw_data = tensor.raw_data[: rng.randrange(len(tensor.raw_data))]
    else:
        tensor.dims.append(rng.choice(_DIMS[:5]))
    return True


def drop_graph_io(model: onnx.ModelProto, rng: random.Random) -> bool:
    fields = [f for f in (model.graph.input, model.graph.output, model.graph.value_info) if f]
    if not fields:
        return False
    field = rng.choice(fields)
    del field[rng.randrange(len(field))]
    return True


MUTATIONS: tuple[Mutation, ...] = (
    drop_attribute, retype_attribute, change_attribute_value, change_dim, change_rank, change_elem_type,
    rewire_input, duplicate_name, delete_node, clone_node, change_operator, change_opset, change_domain,
    damage_weights, drop_graph_io, *HOSTILE_MUTATIONS,
)  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    seed_model: str
    mutations: tuple[str, ...]
    exit_code: int
    output: str  # stdout and stderr
    report: str = ""  # stdout: the JSON report

    @property
    def is_bug(self) -> bool:
        return (
            self.exit_code not in (0, 1, 2) or "internal error" in self.output or "Traceback" in self.output
        )


def mutate(source: Path, folder: Path, rng: random.Random, count: int) -> tuple[Path, tuple[str, ...]]:
    """Write a mutated copy of ``source`` (and its external-data files) into ``folder``."""
    model = onnx.load(str(source), load_external_data=False)
    PENDING.replacements.clear()
    PENDING.files.clear()
    chosen = [rng.choice(MUTATIONS) for _ in range(count)]
    applied = tuple(m.__name__ if m(model, rng) else "noop" for m in chosen)
    for sibling in source.parent.glob(source.name + ".data"):
        shutil.copyfile(sibling, folder / sibling.name)
    for name, size in PENDING.files.items():
        with open(folder / name, "wb") as handle:
            handle.truncate(size)  # sparse: a 1 GiB data file costs no disk
    data = model.SerializeToString()
    for (
        placeholder,
        raw,
    ) in PENDING.replacements:  # strings protobuf would refuse to hold (see hostile_mutations)
        data = data.replace(placeholder, raw)
    target = folder / source.name
    target.write_bytes(data)
    return target, applied


def run_case(source: Path, folder: Path, rng: random.Random, count: int, *, compare: bool = True) -> Outcome:
    target, applied = mutate(source, folder, rng, count)
    command = COMMAND if compare else [*COMMAND[:2], "--isolated"]
    result = CliRunner().invoke(main, [*command, str(target)])
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        output += f"\nTraceback: {type(result.exception).__name__}: {result.exception}"
    return Outcome(str(source.relative_to(SAMPLES)), applied, result.exit_code, output, result.stdout)


def long_run(cases: int, seed: int, keep: Path | None = None, minutes: float | None = None) -> int:
    seeds = seed_models()
    rng = random.Random(seed)
    exits: Counter[int] = Counter()
    mutations: Counter[str] = Counter()
    bugs: list[tuple[int, Outcome]] = []
    crashes = 0
    started = time.perf_counter()
    done = 0
    for case in range(cases):
        if minutes is not None and time.perf_counter() - started > minutes * 60:
            break
        done += 1
        case_rng = random.Random(rng.getrandbits(64))
        source = case_rng.choice(seeds)
        if case % 500 == 0:
            print(f"case {case}...", flush=True)  # where to resume if onnxruntime takes the process down
        with tempfile.TemporaryDirectory() as folder:
            outcome = run_case(source, Path(folder), case_rng, case_rng.randint(1, 6))
            if "onnxruntime crashed" in outcome.output:
                crashes += 1
                print(f"case {case}: onnxruntime crashed on {outcome.seed_model} after {outcome.mutations}")
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(Path(folder) / source.name, keep / f"case{case}_{source.name}")
        exits[outcome.exit_code] += 1
        mutations.update(outcome.mutations)
        if outcome.is_bug:
            bugs.append((case, outcome))
            print(f"case {case}: BUG on {outcome.seed_model} after {outcome.mutations}", flush=True)
            print("  " + outcome.output.strip().replace("\n", "\n  ")[:2000], flush=True)
    elapsed = time.perf_counter() - started
    per_case = elapsed / max(done, 1) * 1000
    print(f"{done} cases (seed {seed}) from {len(seeds)} seed models in {elapsed:.0f} s", end=" ")
    print(f"({per_case:.0f} ms per case)")
    print("exit codes: " + ", ".join(f"{code}: {n}" for code, n in sorted(exits.items())))
    print("mutations applied: " + ", ".join(f"{name} {n}" for name, n in sorted(mutations.items())))
    print(f"onnxruntime crashes contained (reported as RUNTIME.not-compared): {crashes}")
    print(f"internal errors or tracebacks: {len(bugs)}")
    return 1 if bugs else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="copy the models onnxruntime crashed on into this folder")
    parser.add_argument("--minutes", type=float, help="stop after this many minutes (at most --cases cases)")
    args = parser.parse_args()
    sys.exit(long_run(args.cases, args.seed, args.keep, args.minutes))
