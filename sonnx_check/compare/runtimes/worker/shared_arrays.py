"""Large arrays between sonnx-check and its worker process (the runtime under test) without copying them
through a pipe.

A request or a reply is pickled with protocol 5: the buffers of large arrays (and of model bytes wrapped in
``pickle.PickleBuffer``) are written out of band to a shared memory file, and only the small pickle and the
buffers' places cross the pipe. Through a pipe, 300 MB of edge datasets cost thousands of 64 KiB writes and
reads on each side; through the shared file they cost one copy, and the worker runs onnxruntime on the
feeds where they lie (mapped), as it would on feeds it had unpickled.

The shared files are anonymous (``memfd_create``): nothing has a name on disk, so nothing is left behind
whatever ends either process (a crash, SIGKILL, an OOM kill); the memory goes with the last process holding
them. The parent creates two, one for requests and one for replies, and hands them to its worker only
(``pass_fds``); only that worker writes what the parent reads, as with the pipe. Where ``memfd_create`` does
not exist (not Linux), or when a region cannot take a message (no memory), the message is pickled into the
pipe as before.

Writers write with ``pwrite`` and the parent reads replies with ``preadv`` into memory of its own: neither
maps a region, so a region is never part of the writer's address space (the worker's RLIMIT_AS) or of the
parent's resident memory. Only the worker maps the request region, to read feeds in place. Each side writes
only while the other waits for the message; the parent empties a region that took more than ``KEEP``
bytes once the call is over.
"""

from __future__ import annotations

import mmap
import os
import pickle
from typing import IO, Any

INLINE = 1 << 16  # a buffer smaller than this travels inside the pickle: a region costs more than it saves
KEEP = 32 << 20  # bytes a region keeps between calls (kept: no new pages to fault in on the next call)
_ALIGN = 64  # each buffer starts on a cache line (and SIMD-aligned for onnxruntime's kernels)
_IN_BAND, _OUT_OF_BAND = "in-band", "out-of-band"

Spans = list[tuple[int, int]]  # (offset, length) of each out-of-band buffer, in pickling order


class Region:
    """One anonymous shared memory file."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map: mmap.mmap | None = None  # the reader's mapping, for views in place
        self._used = 0  # bytes the last message took
        self._appended = 0  # where ``append`` writes next

    @classmethod
    def create(cls) -> Region | None:
        """A new region, or None where anonymous shared files do not exist."""
        try:
            fd = os.memfd_create("sonnx-check", os.MFD_CLOEXEC)
        except (AttributeError, OSError):
            return None
        return cls(fd)

    def write(self, buffers: list[pickle.PickleBuffer]) -> Spans:
        """Write ``buffers`` into the region (it grows as needed); their places."""
        spans: Spans = []
        end = 0
        for buffer in buffers:
            raw = buffer.raw()
            start = end + (-end % _ALIGN)
            end = start + raw.nbytes
            spans.append((start, raw.nbytes))
            written = 0
            while written < raw.nbytes:
                written += os.pwrite(self.fd, raw[written:], start + written)
        self._used = end
        return spans

    def append(self, data: bytes | memoryview, align: int = _ALIGN) -> int:
        """Write ``data`` after what earlier appends wrote, at a multiple of ``align`` (a file of the model's
        weights, shared_weights); its offset."""
        raw = memoryview(data).cast("B")
        start = self._appended + (-self._appended % align)
        written = 0
        while written < raw.nbytes:
            written += os.pwrite(self.fd, raw[written:], start + written)
        self._appended = start + raw.nbytes
        return start

    def copies(self, spans: Spans) -> list[bytearray]:
        """The buffers at ``spans``, each read into memory of its own."""
        self._used = max((start + length for start, length in spans), default=0)
        out = []
        for start, length in spans:
            buffer = bytearray(length)
            view = memoryview(buffer)
            done = 0
            while done < length:
                got = os.preadv(self.fd, [view[done:]], start + done)
                if got <= 0:
                    raise ValueError("a buffer lies past the end of the shared region")
                done += got
            out.append(buffer)
        return out

    def views(self, spans: Spans) -> list[memoryview]:
        """The buffers at ``spans`` where they lie (valid until the writer writes the region again)."""
        size = self._used = max((start + length for start, length in spans), default=0)
        if self._map is None or len(self._map) < size:
            length = os.fstat(self.fd).st_size
            if length < size:
                raise ValueError("a buffer lies past the end of the shared region")
            self._map = mmap.mmap(self.fd, length)  # the old mapping lives on while arrays use it
        whole = memoryview(self._map)
        return [whole[start : start + length] for start, length in spans]

    def release(self) -> None:
        """The reader is done with the message (its views are gone): let go of the mapping and of the
        region's pages. After a model's bytes were copied out, they are then not held twice while
        onnxruntime loads it (the writer waits for the reply: it reads nothing of the region meanwhile)."""
        self._map = None
        self._used = KEEP + 1
        self.trim()

    def trim(self) -> None:
        """Empty the region if the last message was large (called while the other side waits: its
        mapping, if any, is not being read)."""
        if self._used > KEEP:
            os.ftruncate(self.fd, 0)
            self._used = 0

    def close(self) -> None:
        self._map = None  # unmapped once no array refers to it
        os.close(self.fd)


def send(message: Any, stream: IO[bytes], region: Region | None, limit: int | None = None) -> None:
    """Pickle ``message`` into ``stream``, its large buffers into ``region`` (None: all into the stream).
    ``limit``: more out-of-band bytes than that go into the stream too (the worker's replies: the parent
    copies a reply out of the region, and a large one must not be held three times at once)."""
    if region is not None:
        large: list[pickle.PickleBuffer] = []

        def out_of_band(buffer: pickle.PickleBuffer) -> bool:
            if buffer.raw().nbytes < max(INLINE, 1):
                return True  # in band
            large.append(buffer)
            return False

        try:
            payload = pickle.dumps(message, protocol=5, buffer_callback=out_of_band)
            if limit is not None and sum(b.raw().nbytes for b in large) > limit:
                raise MemoryError
            spans = region.write(large)
        except (OSError, MemoryError):  # the region could not take it: into the stream, as before
            pass
        else:
            pickle.dump((_OUT_OF_BAND, payload, spans), stream, protocol=5)
            stream.flush()
            return
        finally:
            del large
    # written straight to the stream: a large buffer is never copied into one whole pickle in memory
    pickle.dump((_IN_BAND, message), stream, protocol=5)
    stream.flush()


def receive(stream: IO[bytes], region: Region | None, *, copy: bool) -> Any:
    """The message ``send`` wrote. ``copy``: its arrays get memory of their own (needed when they outlive
    the next message); otherwise they are views of the region. Raises EOFError when the stream ended."""
    return unpack(pickle.load(stream), region, copy=copy)


def unpack(framing: Any, region: Region | None, *, copy: bool) -> Any:
    """``receive`` once the framing was read from the stream (the stream is then at the next message)."""
    if framing[0] == _IN_BAND:
        return framing[1]
    _, payload, spans = framing
    if not spans:
        return pickle.loads(payload)
    if region is None:
        raise ValueError("out-of-band buffers without a shared region")
    buffers: list[Any] = region.copies(spans) if copy else region.views(spans)
    return pickle.loads(payload, buffers=buffers)
