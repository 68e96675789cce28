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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from sonnx_check.compare import backend_layout
from sonnx_check.errors import UsageError
from sonnx_check.inputs_option import check_inputs_source
from sonnx_check.view import elem_type_name, tensor_type_of

RANDOM = "random"
EDGE = "edge"
FLOAT_RANGE = 10.0  # random floats in [-10, 10]: symmetric, so negative-only windows occur
TIE_FRACTION = 0.125  # share of random elements overwritten by a copy of another one (exact ties)
_CHUNK = 1 << 20  # elements generated at a time

T = onnx.TensorProto
GENERATED_TYPES = {
    T.FLOAT: np.float32,
    T.DOUBLE: np.float64,
    T.FLOAT16: np.float16,
    T.INT8: np.int8,
    T.INT16: np.int16,
    T.INT32: np.int32,
    T.INT64: np.int64,
    T.UINT8: np.uint8,
    T.UINT16: np.uint16,
    T.UINT32: np.uint32,
    T.UINT64: np.uint64,
    T.BOOL: np.bool_,
}


class InputBudgetExceeded(Exception):
    """An input larger than ``max_elements``: the comparison is not run (a RUNTIME.not-compared finding,
    not a usage error, so the model's static findings are still reported)."""


@dataclass(frozen=True)
class InputSpec:
    """A graph input that needs data: its declared element type and shape (a dim is an int when known,
    otherwise the dim_param name or None), after ``--shape`` overrides."""

    name: str
    elem_type: int
    dims: tuple[int | str | None, ...] | None
    overridden: bool = False

    @property
    def dtype(self) -> np.dtype | None:
        generated = GENERATED_TYPES.get(self.elem_type)
        if generated is not None:
            return np.dtype(generated)
        try:
            return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(self.elem_type))
        except (KeyError, TypeError, ValueError):
            return None

    def static_shape(self) -> tuple[int, ...]:
        """The shape to generate data for; a UsageError naming the input and the dim when it is not static."""
        if self.dims is None:
            raise UsageError(
                f"input '{self.name}' has no declared shape: give --shape {self.name}=D1,D2,... to compare"
            )
        # the --shape to suggest: the declared sizes, 1 wherever there is none
        example = ",".join(str(d) if isinstance(d, int) and d >= 0 else "1" for d in self.dims)
        for axis, dim in enumerate(self.dims):
            if isinstance(dim, int) and dim < 0:
                raise UsageError(
                    f"input '{self.name}' declares the negative dimension {dim} (axis {axis}): "
                    f"give --shape {self.name}={example}"
                )
            if not isinstance(dim, int):
                what = f"a non-static dimension '{dim}'" if dim else "an unnamed non-static dimension"
                raise UsageError(
                    f"input '{self.name}' has {what} (axis {axis}): give --shape {self.name}={example}"
                )
        return tuple(self.dims)  # type: ignore[arg-type]

    def accepts(self, shape: Sequence[int]) -> str | None:
        """Why an array of ``shape`` cannot feed this input (None when it can)."""
        if self.dims is None:
            return None
        if len(shape) != len(self.dims):
            return f"has rank {len(shape)}, the input is declared with rank {len(self.dims)}"
        for axis, (got, want) in enumerate(zip(shape, self.dims, strict=True)):
            if isinstance(want, int) and got != want:
                return f"has {got} at axis {axis}, the input is declared with {want}"
        return None


@dataclass(frozen=True)
class Dataset:
    """One set of input values for one run: ``name`` says which (``random``, ``edge/neg-inf``, a file).

    Generated data is built when ``feeds`` is read, each time, and never kept: a comparison holds one
    dataset at a time (a model with a 400 MB input has a dozen edge datasets, which must not all be in
    memory at once). ``inputs`` describes the data without building it."""

    name: str
    source: str
    inputs: tuple[tuple[str, np.dtype, tuple[int, ...]], ...]  # (input name, dtype, shape), in feed order
    build: Callable[[], Mapping[str, np.ndarray]] = field(repr=False, compare=False)

    @classmethod
    def of(cls, name: str, source: str, feeds: Mapping[str, np.ndarray]) -> Dataset:
        """A dataset whose data is already in memory (the user's own file)."""
        inputs = tuple((k, v.dtype, tuple(int(d) for d in v.shape)) for k, v in feeds.items())
        held = dict(feeds)
        return cls(name, source, inputs, lambda: held)

    @property
    def feeds(self) -> Mapping[str, np.ndarray]:
        return self.build()

    @property
    def nbytes(self) -> int:
        return sum(math.prod(shape) * dtype.itemsize for _, dtype, shape in self.inputs)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "source": self.source,
            "inputs": {k: {"dtype": dtype.name, "shape": list(shape)} for k, dtype, shape in self.inputs},
        }


# -- which inputs need data -------------------------------------------------------------------------------


def input_specs(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]] | None = None) -> list[InputSpec]:
    """The graph inputs without an initializer, with ``--shape`` overrides applied and checked."""
    shapes = dict(shapes or {})
    initialised = {t.name for t in model.graph.initializer}
    specs: list[InputSpec] = []
    for value_info in model.graph.input:
        if value_info.name in initialised:
            continue
        declared = tensor_type_of(value_info)
        if declared is None or declared.sparse or declared.elem_type == 0:
            raise UsageError(f"input '{value_info.name}' declares no tensor element type: it cannot be fed")
        dims = declared.shape
        override = shapes.pop(value_info.name, None)
        if override is not None:
            dims = _apply_override(value_info.name, dims, tuple(int(d) for d in override))
        specs.append(InputSpec(value_info.name, declared.elem_type, dims, overridden=override is not None))
    if shapes:
        names = ", ".join(f"'{s.name}'" for s in specs) or "none"
        unknown = ", ".join(f"'{n}'" for n in sorted(shapes))
        raise UsageError(
            f"--shape names {unknown}, not an input of the model that needs data (inputs: {names})"
        )
    return specs


def _apply_override(
    name: str, declared: tuple[int | str | None, ...] | None, override: tuple[int, ...]
) -> tuple[int, ...]:
    if any(d < 0 for d in override):
        raise UsageError(f"--shape {name}: dimensions must be non-negative")
    if declared is None:
        return override
    if len(declared) != len(override):
        raise UsageError(
            f"--shape {name}={_dims_text(override)} has rank {len(override)}; "
            f"input '{name}' is declared with rank {len(declared)}"
        )
    for axis, (want, got) in enumerate(zip(declared, override, strict=True)):
        if isinstance(want, int) and want >= 0 and want != got:  # a negative dim is no size: overridable
            raise UsageError(
                f"--shape {name}={_dims_text(override)} gives {got} at axis {axis}; "
                f"input '{name}' declares the static dimension {want} there"
            )
    return override


def check_budget(name: str, shape: Sequence[int], max_elements: int, where: str = "") -> None:
    count = int(np.prod(shape, dtype=np.float64)) if len(shape) else 1
    if count > max_elements:
        origin = f" in {where}" if where else ""
        raise InputBudgetExceeded(
            f"input '{name}'{origin} has {count} elements (shape {_dims_text(shape)}), more than "
            f"--max-elements {max_elements}; raise --max-elements to compare it"
        )


def _dims_text(shape: Sequence[int]) -> str:
    return ",".join(str(d) for d in shape)


# -- building the datasets -------------------------------------------------------------------------------


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
        info = np.iinfo(dtype)
        values = {info.min, info.max, 0, 1, info.max - 1, info.min + 1} | (
            {-1} if dtype.kind == "i" else set()
        )
        return np.array(sorted(values), dtype=dtype)
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
        part[chosen] = specials[picks[start : start + part.size][chosen]]
    del picks
    if flat.size >= specials.size:
        flat[rng.choice(flat.size, size=specials.size, replace=False)] = specials
    return values


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
