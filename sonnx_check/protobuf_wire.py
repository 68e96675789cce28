"""The protobuf wire format, read and written field by field without decoding a message: what the loader's
skeleton (loading.py) and the onnxruntime worker's model edits (compare/runtimes/worker/model_bytes.py)
share. No imports: the
worker loads it without onnx.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, I64, LEN, I32 = 0, 1, 2, 5  # wire types (groups, 3 and 4, are never in onnx.proto)


class Malformed(ValueError):
    """Bytes that are not a protobuf message (or use groups)."""


def fields(view: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, tag start, value start, value end) of every field in ``view[start:end]``;
    for a varint, "value end" is the value itself and "value start" where the next field begins."""
    pos = start
    while pos < end:
        tag_start = pos
        key = view[pos]
        if key < 0x80:  # one-byte tags and lengths are the rule: decoded inline, they keep a scan of
            pos += 1  # 100 000 nodes well under a second
        else:
            key, pos = varint(view, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise Malformed("field number 0")
        if wire == VARINT:
            value, pos = varint(view, pos, end)
            yield number, wire, tag_start, pos, value
            continue
        if wire == LEN:
            if pos < end and view[pos] < 0x80:
                size, pos = view[pos], pos + 1
            else:
                size, pos = varint(view, pos, end)
            value_start, pos = pos, pos + size
        elif wire in (I64, I32):
            value_start, pos = pos, pos + (8 if wire == I64 else 4)
        else:
            raise Malformed(f"unsupported wire type {wire}")
        if pos > end:
            raise Malformed("field past the end of the message")
        yield number, wire, tag_start, value_start, pos


def varint(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and where it ends."""
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise Malformed("truncated varint")
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited_tag(number: int, length: int) -> bytes:
    """The tag and length of a length-delimited field (its bytes follow)."""
    return encode_varint(number << 3 | LEN) + encode_varint(length)
