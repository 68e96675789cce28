"""Large arrays between sonnx-check and its onnxruntime worker without copying them through a pipe.

A request or a reply is pickled with protocol 5: the buffers of large arrays (and of model bytes wrapped in
``pickle.PickleBuffer``) are placed out of band in a shared memory file, and only the small pickle and the
buffers' places cross the pipe. Through a pipe, 300 MB of edge datasets cost thousands of 64 KiB writes and
reads and two kernel copies; through the shared file they cost one copy (the worker runs onnxruntime on the
arrays where they lie).

The shared files are anonymous (``memfd_create``): nothing has a name on disk, so nothing is left behind
whatever ends either process (a crash, SIGKILL, an OOM kill); the memory goes with the last process holding
them. The parent creates two, one for requests and one for replies, and hands them to its worker only
(``pass_fds``); only that worker writes what the parent reads, as with the pipe. Where ``memfd_create`` does
not exist (not Linux), or when a region cannot grow (no memory), a message is pickled in band as before.

Each side writes only its own region and only while the other waits for the message, and a region only ever
grows (a shrinking file would fault the other side's mapping): what it holds beyond ``KEEP`` bytes is given
back to the system by the parent once a call is over.
"""

from __future__ import annotations

import mmap
import os
import pickle
from typing import Any

INLINE = 1 << 16  # a buffer smaller than this travels inside the pickle: a region costs more than it saves
KEEP = 64 << 20  # bytes a region keeps between calls (its pages stay mapped: no page faults next time)
_ALIGN = 64  # each buffer starts on a cache line (and SIMD-aligned for onnxruntime's kernels)

Spans = list[tuple[int, int]]  # (offset, length) of each out-of-band buffer, in pickling order


class Region:
    """One anonymous shared memory file and this process's mapping of it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map: mmap.mmap | None = None
        self._used = 0  # bytes the last message placed in it

    @classmethod
    def create(cls) -> Region | None:
        """A new region, or None where anonymous shared files do not exist."""
        try:
            fd = os.memfd_create("sonnx-check", os.MFD_CLOEXEC)
        except (AttributeError, OSError):
            return None
        return cls(fd)

    def _mapped(self, size: int, *, grow: bool) -> mmap.mmap:
        """The mapping, covering at least ``size`` bytes; ``grow``: the writer grows the file to that."""
        if self._map is None or len(self._map) < size:
            length = os.fstat(self.fd).st_size
            if length < size:
                if not grow:
                    raise ValueError("a buffer lies past the end of the shared region")
                length = size + (-size % mmap.PAGESIZE)
                os.ftruncate(self.fd, length)
            # the old mapping stays alive as long as arrays made from it do
            self._map = mmap.mmap(self.fd, length)
        return self._map

    def write(self, buffers: list[pickle.PickleBuffer]) -> Spans:
        """Copy ``buffers`` into the region; their places."""
        spans: Spans = []
        end = 0
        for buffer in buffers:
            start = end + (-end % _ALIGN)
            end = start + buffer.raw().nbytes
            spans.append((start, end - start))
        target = memoryview(self._mapped(end, grow=True))
        for (start, length), buffer in zip(spans, buffers, strict=True):
            target[start : start + length] = buffer.raw()
        target.release()
        self._used = end
        return spans

    def read(self, spans: Spans) -> list[memoryview]:
        """Views of the buffers at ``spans`` (valid until the writer writes the region again)."""
        whole = memoryview(self._mapped(max((s + n for s, n in spans), default=0), grow=False))
        return [whole[start : start + length] for start, length in spans]

    def trim(self) -> None:
        """Give back the pages of a large message (the file keeps its size: the other side's mapping
        stays valid and reads zeros)."""
        if self._used > KEEP:
            self.discard()

    def discard(self) -> None:
        """Give back the pages of the region, whatever it holds (its reader is done with the message)."""
        if self._map is not None:
            try:
                self._map.madvise(mmap.MADV_REMOVE)
            except (AttributeError, OSError):  # not supported here: the pages stay until the region closes
                return
        self._used = 0

    def close(self) -> None:
        self._map = None  # unmapped once no array refers to it
        os.close(self.fd)


def encode(message: Any, region: Region | None) -> tuple[bytes, Spans]:
    """``message`` pickled, its large buffers placed in ``region`` (None: everything in band)."""
    if region is not None:
        large: list[pickle.PickleBuffer] = []

        def out_of_band(buffer: pickle.PickleBuffer) -> bool:
            if buffer.raw().nbytes < INLINE:
                return True  # in band
            large.append(buffer)
            return False

        try:
            payload = pickle.dumps(message, protocol=5, buffer_callback=out_of_band)
            return payload, region.write(large) if large else []
        except (OSError, MemoryError, ValueError):
            pass  # the region could not grow: in band, as through a plain pipe
        finally:
            del large
    return pickle.dumps(message, protocol=5), []


def decode(payload: bytes, spans: Spans, region: Region | None, *, copy: bool) -> Any:
    """The message ``encode`` made. ``copy``: its arrays get memory of their own (needed when they outlive
    the next message); otherwise they are views of the region."""
    if not spans:
        return pickle.loads(payload)
    assert region is not None, "out-of-band buffers without a region"
    views = region.read(spans)
    buffers: list[Any] = [bytearray(view) for view in views] if copy else views
    del views
    return pickle.loads(payload, buffers=buffers)
