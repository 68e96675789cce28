"""A large run's results as they arrive from the worker, one (name, array) part at a time, read only when
the comparison first asks for a name (``Arriving``).

The worker streams a large reply part by part and gives back each part's memory once it is written
(process._send_parts); read whole before anything was compared, the reply was held by sonnx-check at once
beside what the worker had not given back yet (DenseNet-121's intermediates, 170 MiB). Read as the
comparison goes, and each tensor let go after its last reader (``release``), sonnx-check holds the tensors
still to be read by a later node, and the two processes together about one copy of the reply.

Every part is read before the worker's next request (``drain``): the stream carries one reply at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from sonnx_check.compare.runtimes.base import StreamedOutputs

Part = tuple[str, Any]


class Released(RuntimeError):
    """A tensor was asked for after it was let go: a bug of the release plan, never a missing output."""


class Arriving(StreamedOutputs):
    """The run's results, named ``names`` (the outputs asked of the runtime, which it returns all of), read
    ``count`` parts from ``read_part`` as lookups need them. ``keep``: the names a lookup may ask for (None:
    every name); any other part is dropped as it arrives."""

    def __init__(
        self,
        names: Sequence[str],
        count: int,
        read_part: Callable[[], Part],
        keep: Collection[str] | None = None,
    ) -> None:
        self._names = list(dict.fromkeys(names))
        self._known = set(self._names)
        self._left = count
        self._read_part = read_part
        self._keep = None if keep is None else set(keep)
        self._arrived: dict[str, Any] = {}
        self._gone: set[str] = set()

    def keep_only(self, names: Collection[str]) -> None:
        """From now on, drop on arrival the parts not in ``names`` (and those arrived already)."""
        self._keep = set(names)
        for name in [n for n in self._arrived if n not in self._keep]:
            self.release(name)

    def __getitem__(self, name: str) -> Any:
        if name in self._arrived:
            return self._arrived[name]
        if name in self._gone:
            raise Released(f"'{name}' was let go before its last reader")
        if name not in self._known:
            raise KeyError(name)
        while self._left:
            got, value = self._next()
            if got == name:
                if self._keep is not None and got not in self._keep:
                    self._gone.add(got)  # asked for once, not kept for later readers
                else:
                    self._arrived[got] = value
                return value
            if self._keep is None or got in self._keep:
                self._arrived[got] = value
            else:
                self._gone.add(got)
            del value
        raise KeyError(name)  # fewer parts than names: the caller's reading of a bad reply

    def __contains__(self, name: object) -> bool:
        return name in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def release(self, name: str) -> None:
        """Let go of ``name``'s array (a later lookup raises Released)."""
        self._arrived.pop(name, None)
        self._gone.add(name)

    def drain(self) -> None:
        """Read the parts no lookup asked for, dropping those not kept: the stream is then at the next
        reply."""
        while self._left:
            got, value = self._next()
            if self._keep is None or got in self._keep:
                self._arrived[got] = value
            else:
                self._gone.add(got)
            del value

    @property
    def pending(self) -> bool:
        """Whether parts are still to be read from the stream."""
        return self._left > 0

    def _next(self) -> Part:
        part = self._read_part()
        self._left -= 1
        return part
