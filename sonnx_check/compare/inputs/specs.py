"""The inputs a comparison feeds, and one set of values for them: which graph inputs need data (with the
``--shape`` overrides checked against what the model declares), their element types, and the budget on
their sizes. Separate from the data itself (datasets.py), which is built from these descriptions."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx

from sonnx_check.errors import UsageError
from sonnx_check.view import tensor_type_of

T = onnx.TensorProto
GENERATED_TYPES: dict[int, type[np.generic]] = {
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
