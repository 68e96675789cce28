"""The input data a comparison runs on: seeded random data, edge values, or the user's own file.

Uniform random data in [0, 1) (Polygraphy's default) never reaches the cases where runtimes depart from
SONNX: -inf, NaN, signed zeros, the type's extremes, subnormals and ties. The ``edge`` datasets put each of
those in every input, several deterministic tensors per input, so a divergence shows up without the user
having to think of it. ``random`` adds broad coverage of ordinary values, with exact ties planted.

Everything here is deterministic for a given seed and input name: a report can be reproduced, and adding an
input to a model does not change the data of the others.

Sizes are checked against the budget before any array is allocated, including the arrays of a user's file
(read from the .npy header or the TensorProto dims first).
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from sonnx_check.compare.inputs import backend_layout
from sonnx_check.compare.inputs.specs import (
    GENERATED_TYPES,
    Dataset,
    InputSpec,
    check_budget,
    input_specs,
)
from sonnx_check.errors import UsageError
from sonnx_check.inputs_option import check_inputs_source
from sonnx_check.view import elem_type_name

RANDOM = "random"
EDGE = "edge"
FLOAT_RANGE = 10.0  # random floats in [-10, 10]: symmetric, so negative-only windows occur
TIE_FRACTION = 0.125  # share of random elements overwritten by a copy of another one (exact ties)
_CHUNK = 1 << 20  # elements generated at a time

# -- building the datasets -------------------------------------------------------------------------------


def model_datasets(
    model: onnx.ModelProto,
    sources: Sequence[str],
    shapes: Mapping[str, Sequence[int]],
    *,
    seed: int,
    max_elements: int,
) -> list[Dataset]:
    """The datasets of a model's comparison: its inputs that need data (``--shape`` applied), fed from the
    sources the options name; any graph input may be given by a user file."""
    return build_datasets(
        sources,
        input_specs(model, shapes),
        seed=seed,
        max_elements=max_elements,
        feedable=[v.name for v in model.graph.input],
    )


def build_datasets(
    sources: Sequence[str],
    specs: Sequence[InputSpec],
    *,
    seed: int,
    max_elements: int,
    feedable: Sequence[str] = (),
) -> list[Dataset]:
    """Every dataset the options name, in order. ``feedable`` are all graph input names (a user file may
    also override an input that has an initializer)."""
    if not sources:
        raise UsageError("no comparison inputs selected (use --inputs random, edge or a file)")
    datasets: list[Dataset] = []
    for source in sources:
        if source in (RANDOM, EDGE) and not specs:
            # nothing to generate: every generated dataset would be the same empty one
            if not any(d.source in (RANDOM, EDGE) for d in datasets):
                datasets.append(Dataset.of("no-inputs", source, {}))
        elif source in (RANDOM, EDGE):
            shapes = {s.name: s.static_shape() for s in specs}
            for spec in specs:
                check_budget(spec.name, shapes[spec.name], max_elements)
            if source == RANDOM:
                datasets.append(random_dataset(specs, shapes, seed))
            else:
                datasets.extend(edge_datasets(specs, shapes, seed))
        else:
            datasets.extend(load_user_datasets(Path(source), specs, max_elements, feedable))
    return datasets


def _rng(seed: int, *words: str) -> np.random.Generator:
    return np.random.default_rng([seed, *(zlib.crc32(w.encode()) for w in words)])


def _dtype_of(spec: InputSpec) -> np.dtype:
    generated = GENERATED_TYPES.get(spec.elem_type)
    if generated is None:
        raise UsageError(
            f"input '{spec.name}' has type {elem_type_name(spec.elem_type)}, for which sonnx-check cannot "
            "generate comparison data: give the data with --inputs FILE.npz"
        )
    return np.dtype(generated)


def random_dataset(specs: Sequence[InputSpec], shapes: Mapping[str, tuple[int, ...]], seed: int) -> Dataset:
    dtypes = {s.name: _dtype_of(s) for s in specs}

    def build() -> dict[str, np.ndarray]:
        return {s.name: random_array(dtypes[s.name], shapes[s.name], _rng(seed, s.name)) for s in specs}

    return Dataset(RANDOM, RANDOM, _described(specs, dtypes, shapes), build)


def _described(
    specs: Sequence[InputSpec], dtypes: Mapping[str, np.dtype], shapes: Mapping[str, tuple[int, ...]]
) -> tuple[tuple[str, np.dtype, tuple[int, ...]], ...]:
    return tuple((s.name, dtypes[s.name], tuple(shapes[s.name])) for s in specs)


def random_array(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values over a range that suits the type, with a share of exact ties planted.

    Floats: uniform in [-FLOAT_RANGE, FLOAT_RANGE] (symmetric, so all-negative windows happen). Integers:
    the full range of the type, where the extremes (padding values) matter."""
    if dtype.kind == "f":
        values = np.empty(shape, dtype=dtype)
        for part in _chunks(values.reshape(-1)):  # same stream as one call, without a float64 copy
            part[...] = rng.uniform(-FLOAT_RANGE, FLOAT_RANGE, size=part.size)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        values = rng.integers(0, 2, size=shape).astype(dtype)
    flat = values.reshape(-1)
    if flat.size > 1:
        ties = max(1, int(flat.size * TIE_FRACTION))
        targets = rng.integers(0, flat.size, size=ties)
        sources = rng.integers(0, flat.size, size=ties)
        flat[targets] = flat[sources]
    return values


def _chunks(flat: np.ndarray) -> Iterator[np.ndarray]:
    """Views of ``flat``, ``_CHUNK`` elements each. Generating float data chunk by chunk draws the same
    numbers in the same order as one call (each takes one double from the stream), while the temporaries
    stay small: a 400 MB input must not need 2 GB to build."""
    for start in range(0, flat.size, _CHUNK):
        yield flat[start : start + _CHUNK]


# Edge patterns: name -> builder(dtype, shape, rng). Each input gets the pattern of the dataset's name when
# its type has one, otherwise its type's mixture of specials, so every dataset feeds every input.
Pattern = Callable[[np.dtype, tuple[int, ...], np.random.Generator], np.ndarray]


def _fill(value: object) -> Pattern:
    return lambda dtype, shape, rng: np.full(shape, value, dtype=dtype)


def _lowest(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return np.full(shape, _info(dtype).min, dtype=dtype)


def _highest(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return np.full(shape, _info(dtype).max, dtype=dtype)


def _info(dtype: np.dtype) -> np.finfo | np.iinfo:
    return np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)


def _alternating(a: object, b: object) -> Pattern:
    def build(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        flat = np.empty(int(np.prod(shape)), dtype=dtype)
        flat[0::2] = a
        flat[1::2] = b
        return flat.reshape(shape)

    return build


def _checkerboard(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Two values in a checkerboard over the last two axes: every window of two or more holds a tie of the
    maximum, which tells 'first in window' apart from 'last in window'."""
    high, low = (2, -2) if dtype.kind != "u" else (2, 1)
    if len(shape) < 2:
        return _alternating(high, low)(dtype, shape, rng)
    board = np.empty(shape, dtype=dtype)
    board[..., 0::2, 0::2] = high  # (row + column) even
    board[..., 1::2, 1::2] = high
    board[..., 0::2, 1::2] = low
    board[..., 1::2, 0::2] = low
    return board


def _sparse_over(background: Callable[[np.dtype], object]) -> Pattern:
    """Mostly ``background`` (-inf or the type's minimum) with an ordinary value at every fifth element:
    windows made entirely of the background sit next to windows with one real value."""

    def build(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        values = np.full(shape, background(dtype), dtype=dtype)
        flat = values.reshape(-1)
        flat[::5] = random_array(dtype, (len(flat[::5]),), rng)
        return values

    return build


def _specials(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        info = np.finfo(dtype)
        tiny_sub = info.smallest_subnormal
        values = [
            np.nan,
            np.inf,
            -np.inf,
            0.0,
            -0.0,
            info.min,
            info.max,
            tiny_sub,
            -tiny_sub,
            info.tiny,
            1.0,
            -1.0,
        ]
        return np.array(values, dtype=dtype)
    if dtype.kind in "iu":
        ints = np.iinfo(dtype)
        extremes = {ints.min, ints.max, 0, 1, ints.max - 1, ints.min + 1} | (
            {-1} if dtype.kind == "i" else set()
        )
        return np.array(sorted(extremes), dtype=dtype)
    return np.array([False, True], dtype=dtype)


def _mix(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Specials and ordinary values at random places: the combinations nobody writes by hand. Every special
    value appears at least once when the tensor has room for all of them."""
    specials = _specials(dtype)
    # The draws happen in the order of the plain formulation (every pick, then the ordinary values, then
    # every choice between them), chunk by chunk: where(random() < 0.5, specials[picks], ordinary).
    picks = np.empty(math.prod(shape), dtype=np.uint8)
    for part in _chunks(picks):
        part[...] = rng.integers(0, specials.size, size=part.size)
    values = random_array(dtype, shape, rng)
    flat = values.reshape(-1)
    for start, part in zip(range(0, flat.size, _CHUNK), _chunks(flat), strict=True):
        chosen = rng.random(size=part.size) < 0.5
        # the same values as part[chosen] = specials[picks[...][chosen]]
        _put_where(part, specials.take(picks[start : start + part.size]), chosen)
    del picks
    if flat.size >= specials.size:
        flat[rng.choice(flat.size, size=specials.size, replace=False)] = specials
    return values


def _put_where(target: np.ndarray, values: np.ndarray, mask: np.ndarray) -> None:
    """``target[mask] = values[mask]`` bit for bit (NaN payloads and signed zeros kept), ``values`` being a
    temporary it overwrites: as integers, target ^= (target ^ values) & -mask, which runs without a branch
    per element (np.copyto's ``where`` took ten times as long on a random half of 400k float32)."""
    if target.itemsize not in (1, 2, 4, 8) or not target.flags.c_contiguous:
        np.copyto(target, values, where=mask)
        return
    bits = np.dtype(f"u{target.itemsize}")
    own, other = target.view(bits), values.view(bits)
    ones = mask.view(np.uint8).astype(bits)
    np.negative(ones, out=ones)  # 1 -> all bits set, 0 -> none
    np.bitwise_xor(other, own, out=other)
    other &= ones
    own ^= other


def _subnormals(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    info = np.finfo(dtype)
    # every step drawn first, then every sign, as in steps * smallest_subnormal * signs; chunk by chunk
    steps = np.empty(math.prod(shape), dtype=np.int8)
    for part in _chunks(steps):
        part[...] = rng.integers(1, 8, size=part.size)
    values = np.empty(shape, dtype=dtype)
    flat = values.reshape(-1)
    # IEEE binary16/32/64: k * smallest_subnormal is the bit pattern k (k < 8), set directly, for the
    # arithmetic on subnormals is slow (a microcode assist per operation on x86)
    bits = np.dtype(f"u{flat.itemsize}") if flat.dtype in (np.float16, np.float32, np.float64) else None
    for start, part in zip(range(0, flat.size, _CHUNK), _chunks(flat), strict=True):
        negative = rng.random(size=part.size) < 0.5
        step = steps[start : start + part.size]
        if bits is not None:
            sign = negative.astype(bits) << (8 * bits.itemsize - 1)
            np.bitwise_or(step.astype(bits), sign, out=part.view(bits))
        else:
            part[...] = step.astype(dtype) * info.smallest_subnormal * np.where(negative, -1, 1).astype(dtype)
    return values


FLOAT_PATTERNS: dict[str, Pattern] = {
    "neg-inf": _fill(-np.inf),
    "nan": _fill(np.nan),
    "lowest": _lowest,
    "highest": _highest,
    "neg-inf-sparse": _sparse_over(lambda dtype: -np.inf),
    "signed-zeros": _alternating(0.0, -0.0),
    "signed-zeros-reversed": _alternating(-0.0, 0.0),
    "tie-checkerboard": _checkerboard,
    "subnormals": _subnormals,
    "specials-mix": _mix,
}
INT_PATTERNS: dict[str, Pattern] = {
    "lowest": _lowest,
    "highest": _highest,
    "lowest-sparse": _sparse_over(lambda dtype: np.iinfo(dtype).min),
    "extremes-alternating": lambda dtype, shape, rng: _alternating(np.iinfo(dtype).min, np.iinfo(dtype).max)(
        dtype, shape, rng
    ),
    "tie-checkerboard": _checkerboard,
    "specials-mix": _mix,
}
BOOL_PATTERNS: dict[str, Pattern] = {
    "lowest": _fill(False),
    "highest": _fill(True),
    "tie-checkerboard": _alternating(True, False),
    "specials-mix": _mix,
}


# The second, fourth, ... input of a dataset gets the partner pattern, so elementwise operators meet the
# pairs that matter (Max(+0, -0) and Max(-0, +0)) and not only equal operands.
PARTNERS = {"signed-zeros": "signed-zeros-reversed", "signed-zeros-reversed": "signed-zeros"}


def _patterns_for(dtype: np.dtype) -> dict[str, Pattern]:
    return FLOAT_PATTERNS if dtype.kind == "f" else (INT_PATTERNS if dtype.kind in "iu" else BOOL_PATTERNS)


def edge_pattern_names(dtypes: Sequence[np.dtype]) -> list[str]:
    """The edge datasets for a model whose inputs have ``dtypes``: the union of their patterns, in order."""
    names: list[str] = []
    for dtype in dtypes:
        for name in _patterns_for(dtype):
            if name not in names:
                names.append(name)
    return names


def edge_array(
    pattern: str, dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator, position: int = 0
) -> np.ndarray:
    """One input's data for the edge pattern ``pattern``: the input at an odd ``position`` gets the partner
    pattern, and a type without that pattern gets its mixture of specials."""
    table = _patterns_for(dtype)
    own = PARTNERS.get(pattern, pattern) if position % 2 else pattern
    fill = table.get(own, table["specials-mix"])
    with np.errstate(over="ignore", invalid="ignore"):
        return fill(dtype, shape, rng)


def seeded(seed: int, *words: str) -> np.random.Generator:
    """A generator that depends on the seed and on what it is for (the same data on every run)."""
    return _rng(seed, *words)


def edge_datasets(
    specs: Sequence[InputSpec], shapes: Mapping[str, tuple[int, ...]], seed: int
) -> list[Dataset]:
    dtypes = {s.name: _dtype_of(s) for s in specs}

    def builder(pattern: str) -> Callable[[], dict[str, np.ndarray]]:
        def build() -> dict[str, np.ndarray]:
            return {
                spec.name: edge_array(
                    pattern, dtypes[spec.name], shapes[spec.name], _rng(seed, spec.name, pattern), position
                )
                for position, spec in enumerate(specs)
            }

        return build

    described = _described(specs, dtypes, shapes)
    patterns = edge_pattern_names(list(dtypes.values())) or ["specials-mix"]
    return [Dataset(f"{EDGE}/{pattern}", EDGE, described, builder(pattern)) for pattern in patterns]


# -- the user's own data -----------------------------------------------------------------------------------


def load_user_datasets(
    path: Path, specs: Sequence[InputSpec], max_elements: int, feedable: Sequence[str] = ()
) -> list[Dataset]:
    """A ``.npz`` keyed by input name, or an ONNX test-data folder (``test_data_set_N/input_i.pb``, or one
    such folder itself)."""
    check_inputs_source(str(path))  # again: the file may have gone since the run started
    if path.is_file():
        raw = _read_npz(path, max_elements)
        return [_validated(str(path), str(path), raw, specs, feedable)]
    if _input_files(path):
        return [_validated(str(path), str(path), _read_pb_folder(path, specs, max_elements), specs, feedable)]
    sets = [Path(folder) for folder in backend_layout.dataset_folders(str(path))]
    if not sets:
        raise UsageError(
            f"--inputs {path}: folder holds neither input_N.pb files nor test_data_set_N folders"
        )
    return [
        _validated(str(s), str(path), _read_pb_folder(s, specs, max_elements), specs, feedable) for s in sets
    ]


def _read_npz(path: Path, max_elements: int) -> dict[str, np.ndarray]:
    """Check every member's header against the budget, then load without pickles (a data file must not be
    able to run code)."""
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if not member.endswith(".npy"):
                    continue
                with archive.open(member) as handle:
                    version = np.lib.format.read_magic(handle)
                    if version == (1, 0):
                        shape, _, _ = np.lib.format.read_array_header_1_0(handle)
                    else:
                        shape, _, _ = np.lib.format.read_array_header_2_0(handle)
                check_budget(member[: -len(".npy")], shape, max_elements, str(path))
        with np.load(path, allow_pickle=False) as archive:
            return {name: np.asarray(archive[name]) for name in archive.files}
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise UsageError(f"--inputs {path}: cannot read as .npz ({exc})") from None


def _input_files(folder: Path) -> list[Path]:
    return [Path(file) for _, file in backend_layout.numbered_files(str(folder), "input")]


def _read_pb_folder(folder: Path, specs: Sequence[InputSpec], max_elements: int) -> dict[str, np.ndarray]:
    """input_i.pb TensorProtos: by their name when it is an input's, else by position among the inputs that
    need data (as onnxruntime's test runner feeds them). Read by backend_layout's strict reader: the
    declared dimensions are checked against the budget before the data is decoded."""
    feeds: dict[str, np.ndarray] = {}
    names = {s.name for s in specs}
    for position, file in enumerate(_input_files(folder)):
        tensor = backend_layout.parse_tensor_file(str(file), None, follow_links=True)
        if isinstance(tensor, backend_layout.FileProblem):
            raise UsageError(f"--inputs {folder}/{tensor.reason}")
        if tensor.name and tensor.name in names:
            name = tensor.name
        elif position < len(specs):
            name = specs[position].name
        else:
            raise UsageError(
                f"--inputs {file}: tensor '{tensor.name}' names no input and position {position} is past the "
                f"{len(specs)} input(s) that need data"
            )
        if name in feeds:
            raise UsageError(f"--inputs {folder}: input '{name}' is given twice")
        check_budget(name, tuple(tensor.dims), max_elements, str(file))
        array = backend_layout.decode(tensor, str(file), None, None)
        if isinstance(array, backend_layout.FileProblem):
            raise UsageError(f"--inputs {folder}/{array.reason}")
        feeds[name] = array
    return feeds


def _validated(
    name: str, source: str, raw: Mapping[str, np.ndarray], specs: Sequence[InputSpec], feedable: Sequence[str]
) -> Dataset:
    by_name = {s.name: s for s in specs}
    allowed = set(feedable) | set(by_name)
    for key in raw:
        if key not in allowed:
            listing = ", ".join(f"'{s}'" for s in by_name) or "none"
            raise UsageError(f"--inputs {name}: '{key}' is not an input of the model (inputs: {listing})")
    for spec in specs:
        if spec.name not in raw:
            raise UsageError(f"--inputs {name}: no data for input '{spec.name}'")
        array = raw[spec.name]
        want = spec.dtype
        if want is not None and array.dtype != want:
            raise UsageError(
                f"--inputs {name}: input '{spec.name}' is {array.dtype.name}, the model declares "
                f"{elem_type_name(spec.elem_type)} (no implicit conversion)"
            )
        problem = spec.accepts(array.shape)
        if problem:
            raise UsageError(f"--inputs {name}: input '{spec.name}' {problem}")
    return Dataset.of(name, source, raw)
