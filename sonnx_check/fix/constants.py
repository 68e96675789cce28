"""The model's constant tensors as ``--fix`` rewrites them: find the constant behind a node input, and make
one node read other values instead, without changing what any other node reads.

A constant is an initializer that is not also a graph input (a caller may override such one at run time)
or the output of a Constant node, or an Identity of one (``find`` sees through it: the Identity passes the
same bits on). An external weight is read from its file only when a rewrite needs its values, and its new
values stay external (fix/external.py writes them to the fixed model's own data file). New values are
written bit for bit (``exact_tensor``): a rewrite moves or repeats values, it never computes new ones.

One ``Constants`` lives for one --fix run: it counts the readers of every tensor as the run rewires nodes,
and shares one copy between the nodes that need the same new values.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from sonnx_check.fix.external import ExternalDataError, mark_external, native_dtype
from sonnx_check.fix.external import array as external_array
from sonnx_check.view import DEFAULT_DOMAINS, ModelView, subgraph_attributes

_A = onnx.AttributeProto
# A Constant node's scalar and list forms, with the element type ONNX gives them.
_CONSTANT_FORMS = {
    "value_float": onnx.TensorProto.FLOAT,
    "value_floats": onnx.TensorProto.FLOAT,
    "value_int": onnx.TensorProto.INT64,
    "value_ints": onnx.TensorProto.INT64,
}


class NotConstant(Exception):
    """Why a node input cannot be rewritten as a constant (one line, after the input's name)."""


@dataclass
class Constant:
    """Where a constant's values are held: an initializer, or the Constant node at ``node`` (index)."""

    name: str
    tensor: onnx.TensorProto
    node: int | None = None


class Constants:
    def __init__(self, view: ModelView) -> None:
        self.view = view
        self.graph = view.graph
        self.folder = os.path.dirname(os.path.abspath(view.path))  # where external locations resolve
        # Nodes the run removed (Identity nodes no one reads any more): deleted by ``remove_dead`` once
        # every rewrite that addresses nodes by index is done.
        self.dead: set[int] = set()
        self._readers: Counter[str] | None = None
        self._by_name: dict[str, onnx.TensorProto] | None = None
        self._names: set[str] | None = None
        # (original name, what was done to it) -> (copy's name, the (node, slot) pairs that read the copy)
        self._copies: dict[tuple[str, str], tuple[str, list[tuple[int, int]]]] = {}
        self._reader_sites: dict[str, list[tuple[onnx.NodeProto, int]]] | None = None

    # -- reading ---------------------------------------------------------------------------------------
    def find(self, name: str) -> Constant:
        """The constant behind ``name``, through any chain of Identity nodes (a loop, not a recursion: a
        model may chain thousands, or in a circle); NotConstant says why there is none."""
        seen: set[str] = set()
        while True:
            if not name:
                raise NotConstant("is missing")
            if name in self.view.graph_input_names:
                if name in self._initializers():
                    raise NotConstant(
                        "is an initializer also listed as a graph input: a caller may override it"
                    )
                raise NotConstant("is a graph input, not a constant")
            tensor = self._initializers().get(name)
            if tensor is not None:
                return self._checked(Constant(name, tensor))
            producers = self.view.producers.get(name, ())
            if len(producers) != 1 or producers[0] in self.dead or name in seen:
                break
            seen.add(name)
            node = self.view.nodes[producers[0]]
            if node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS:
                return self._checked(Constant(name, _constant_node_tensor(node), producers[0]))
            if not _is_identity(node):
                break
            name = node.input[0]  # the same bits, passed on
        raise NotConstant("is computed at run time, not a constant")

    def shape(self, name: str) -> tuple[int, ...] | None:
        """The current static shape of ``name``: a constant's own dims (a rewrite may have changed them since
        the view was built), else what the view declares or infers."""
        try:
            return tuple(self.find(name).tensor.dims)
        except NotConstant:
            return self.view.shape_of(name)

    def values(self, constant: Constant) -> np.ndarray:
        tensor = constant.tensor
        try:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                return external_array(tensor, self.folder)
            return numpy_helper.to_array(tensor)
        except (ExternalDataError, OSError) as exc:
            raise NotConstant(f"holds its data in an external file that cannot be read: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a malformed tensor is MODEL.onnx's finding
            raise NotConstant(f"cannot be decoded ({' '.join(str(exc).split())[:120]})") from None

    def _initializers(self) -> dict[str, onnx.TensorProto]:
        if self._by_name is None:
            self._by_name = {t.name: t for t in self.graph.initializer}
        return self._by_name

    def readers(self, name: str) -> int:
        """How many times ``name`` is read: node inputs (subgraphs included) and graph outputs."""
        if self._readers is None:
            self._readers = Counter(_reads(self.graph))
        return self._readers[name]

    def _checked(self, constant: Constant) -> Constant:
        if constant.tensor.HasField("segment"):
            raise NotConstant("is a segment of a tensor, which --fix does not rewrite")
        return constant

    # -- rewriting -------------------------------------------------------------------------------------
    def substitute(
        self, index: int, slot: int, constant: Constant, replacement: onnx.TensorProto, what: str
    ) -> str:
        """Make node ``index`` read ``replacement`` (the constant with ``what`` done to it, made by
        ``exact_tensor``) at input ``slot``.

        In place when the node is the constant's only reader. Otherwise a new initializer under a fresh name,
        shared with every node of this run that needs the same values; when the last reader of the original
        moves to that copy, the original takes the values and every reader moves back to its name (no
        duplicate weights, no orphaned Constant node). Returns the name the node now reads."""
        name = constant.name
        self._bypass(index, slot, name)
        key = (name, what)
        if key not in self._copies and self.readers(name) == 1:
            self._replace(constant, replacement)
            return name
        if key not in self._copies:
            copy = self._fresh(f"{name}_{what.replace(' ', '_')}")
            added = self.graph.initializer.add()
            added.CopyFrom(replacement)
            added.name = copy
            if constant.tensor.data_location == onnx.TensorProto.EXTERNAL:
                mark_external(added)  # a copy of an external weight stays external
            self._initializers()[copy] = added
            self._copies[key] = (copy, [])
        copy, moved = self._copies[key]
        self._rewire(index, slot, copy)
        moved.append((index, slot))
        if self.readers(name) > 0:
            return copy
        self._replace(constant, replacement)
        for node, position in moved:
            self._rewire(node, position, name)
        self._remove(copy)
        del self._copies[key]
        return name

    def _bypass(self, index: int, slot: int, name: str) -> None:
        """Make node ``index`` read the constant ``name`` itself rather than an Identity of it; an Identity
        no one reads any more is removed, and so on up the chain."""
        alias = self.view.nodes[index].input[slot]
        if alias == name:
            return
        self._rewire(index, slot, name)
        self.drop_unread(alias)

    def drop_unread(self, name: str) -> None:
        """Remove the Identity producing ``name`` when nothing reads ``name`` (a graph output counts as a
        reader), then the one before it."""
        readers = self._counts()
        while readers[name] == 0:
            producers = self.view.producers.get(name, ())
            if len(producers) != 1 or producers[0] in self.dead:
                return
            node = self.view.nodes[producers[0]]
            if not _is_identity(node):
                return
            self.dead.add(producers[0])
            name = node.input[0]
            readers[name] -= 1

    def rename_readers(self, old: str, new: str) -> int:
        """Every read of ``old`` by a node, in every graph, reads ``new`` instead; returns how many."""
        readers = self._counts()  # counted before the renaming
        sites = self._sites()
        moved = 0
        for node, slot in sites.pop(old, []):
            if node.input[slot] == old:
                node.input[slot] = new
                sites.setdefault(new, []).append((node, slot))
                moved += 1
        readers[old] -= moved
        readers[new] += moved
        return moved

    def _sites(self) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
        """Where each tensor is read: (node, input slot), in every graph. Built once, kept current by
        ``rename_readers`` and ``_rewire``, so that removing n Identity nodes costs n, not n x nodes."""
        if self._reader_sites is None:
            self._reader_sites = {}
            for g in _graphs(self.graph):
                for node in g.node:
                    for slot, name in enumerate(node.input):
                        if name:
                            self._reader_sites.setdefault(name, []).append((node, slot))
        return self._reader_sites

    def rename_constant(self, constant: Constant, name: str) -> None:
        """Give the constant, read only by an Identity, that Identity's output name ``name``; drop that
        reader (the Identity is removed)."""
        old = constant.name
        if constant.node is None:
            constant.tensor.name = name
            initializers = self._initializers()
            initializers[name] = initializers.pop(old)
        else:
            self.view.nodes[constant.node].output[0] = name
            self.view.producers[name] = [constant.node]
        self._counts()[old] -= 1
        kept = [v for v in self.graph.value_info if v.name != old]
        if len(kept) != len(self.graph.value_info):
            del self.graph.value_info[:]
            self.graph.value_info.extend(kept)

    def remove_dead(self) -> set[str]:
        """Delete the removed nodes and the declarations of the tensors only they produced; returns the
        names of those tensors."""
        if not self.dead:
            return set()
        outputs = {v.name for v in self.graph.output}
        gone = {name for i in self.dead for name in self.view.nodes[i].output} - outputs
        for i in sorted(self.dead, reverse=True):
            del self.graph.node[i]
        kept = [v for v in self.graph.value_info if v.name not in gone]
        if len(kept) != len(self.graph.value_info):
            del self.graph.value_info[:]
            self.graph.value_info.extend(kept)
        self.dead.clear()
        return gone

    def _rewire(self, index: int, slot: int, name: str) -> None:
        node = self.view.nodes[index]
        readers = self._counts()
        readers[node.input[slot]] -= 1
        readers[name] += 1
        node.input[slot] = name
        if self._reader_sites is not None:  # an old site is skipped once it reads another name
            self._reader_sites.setdefault(name, []).append((node, slot))

    def _counts(self) -> Counter[str]:
        self.readers("")
        assert self._readers is not None
        return self._readers

    def _replace(self, constant: Constant, replacement: onnx.TensorProto) -> None:
        """Give the constant new values (and the shape they have) under its own name. ``replacement`` is
        consumed (adjusted and copied once: a weight may be large)."""
        new = replacement
        new.doc_string = constant.tensor.doc_string
        if constant.tensor.data_location == onnx.TensorProto.EXTERNAL:
            mark_external(new)
        if constant.node is None:
            constant.tensor.CopyFrom(new)
        else:
            node = self.view.nodes[constant.node]
            del node.attribute[:]  # value_float(s)/value_int(s) become one value tensor
            node.attribute.append(onnx.helper.make_attribute("value", new))
        # A declaration of the old shape would now contradict the constant.
        for declared in (*self.graph.value_info, *self.graph.output):
            if declared.name == constant.name and declared.type.tensor_type.HasField("shape"):
                del declared.type.tensor_type.shape.dim[:]
                for size in new.dims:
                    declared.type.tensor_type.shape.dim.add().dim_value = size

    def _remove(self, name: str) -> None:
        for i, tensor in enumerate(self.graph.initializer):
            if tensor.name == name:
                del self.graph.initializer[i]
                break
        self._initializers().pop(name, None)

    def _fresh(self, base: str) -> str:
        if self._names is None:
            self._names = set(_names(self.graph))
        name, n = base, 0
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name


def exact_tensor(values: np.ndarray, name: str, *, like: onnx.TensorProto) -> onnx.TensorProto:
    """``values`` as a tensor of ``like``'s element type, checked to hold exactly these bits: a rewrite must
    not round, and a conversion that would (an exotic element type numpy does not hold) is refused."""
    values = np.ascontiguousarray(values)
    tensor = numpy_helper.from_array(values, name)
    if tensor.data_type != like.data_type:
        raise NotConstant(f"is of a type --fix cannot copy bit for bit ({like.data_type})")
    if native_dtype(like.data_type) is not None:
        return tensor  # raw_data is values' own bytes: exact by construction, no second copy to compare
    if numpy_helper.to_array(tensor).tobytes() != values.tobytes():
        raise NotConstant(f"is of a type --fix cannot copy bit for bit ({like.data_type})")
    return tensor


def _is_identity(node: onnx.NodeProto) -> bool:
    return node.op_type == "Identity" and node.domain in DEFAULT_DOMAINS and len(node.input) == 1


def _constant_node_tensor(node: onnx.NodeProto) -> onnx.TensorProto:
    attrs = {a.name: a for a in node.attribute}
    if "value" in attrs and attrs["value"].type == _A.TENSOR:
        return attrs["value"].t
    for form, elem in _CONSTANT_FORMS.items():
        if form in attrs:
            value = onnx.helper.get_attribute_value(attrs[form])
            values = list(value) if isinstance(value, list) else [value]
            dims = [len(values)] if form.endswith("s") else []
            return onnx.helper.make_tensor(node.output[0], elem, dims, values)
    raise NotConstant("is a Constant node output of a form --fix does not rewrite (sparse or string)")


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for name in subgraph_attributes(node):
            attribute = next(a for a in node.attribute if a.name == name)
            for sub in [attribute.g] if attribute.type == _A.GRAPH else attribute.graphs:
                yield from _graphs(sub)


def _reads(graph: onnx.GraphProto) -> Iterator[str]:
    """Every read of a tensor name: a subgraph may read an outer tensor by name, so all graphs count."""
    for g in _graphs(graph):
        for node in g.node:
            yield from (name for name in node.input if name)
    yield from (v.name for v in graph.output)


def _names(graph: onnx.GraphProto) -> Iterator[str]:
    """Every tensor name of the model, so that a new one collides with none."""
    for g in _graphs(graph):
        yield from (t.name for t in g.initializer)
        yield from (t.values.name for t in g.sparse_initializer)
        for values in (g.input, g.output, g.value_info):
            yield from (v.name for v in values)
        for node in g.node:
            yield from node.input
            yield from node.output
