"""The protobuf wire format, read without a schema library: XLA's `.pb` dumps are plain proto3
messages, and reading them needs only varints and length-delimited fields (no dependency on
`protobuf`, whose generated classes for XLA's protos no installed package ships).

A message is decoded once into its fields, each value an int (varints, fixed-width fields) or a
`(start, end)` span of the one buffer every nested message shares, so nothing is copied until a
string or a sub-message is asked for."""

from __future__ import annotations

import struct
from collections.abc import Iterator

__all__ = ["Message", "WireError"]

Value = int | tuple[int, int]


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message; `at` is the byte offset in the file."""

    def __init__(self, at: int, why: str) -> None:
        super().__init__(f"{why} at byte {at}")
        self.at = at


def _varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= end:
            raise WireError(i, "truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise WireError(i, "varint longer than 10 bytes")


class Message:
    """The fields of one message, by number, each a list of values in wire order. Every length
    is checked against the enclosing message, so a damaged file fails with the offset of the
    damage instead of reading past it."""

    __slots__ = ("_subs", "buf", "fields")

    def __init__(self, buf: bytes, start: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self._subs: dict[int, Message | list[Message] | None] = {}
        end = len(buf) if end is None else end
        fields: dict[int, list[Value]] = {}
        i = start
        while i < end:
            key = buf[i]
            if key < 0x80:
                i += 1
            else:
                key, i = _varint(buf, i, end)
            number, wire = key >> 3, key & 7
            if number == 0:
                raise WireError(i, "field number 0")
            value: Value
            if wire == 0 or wire == 2:
                if i >= end:
                    raise WireError(i, "truncated field")
                n = buf[i]
                if n < 0x80:
                    i += 1
                else:
                    n, i = _varint(buf, i, end)
                if wire == 0:
                    value = n
                else:
                    if i + n > end:
                        raise WireError(i, "length past the end of its message")
                    value = (i, i + n)
                    i += n
            elif wire == 5:
                if i + 4 > end:
                    raise WireError(i, "truncated fixed32")
                value = int.from_bytes(buf[i : i + 4], "little")
                i += 4
            elif wire == 1:
                if i + 8 > end:
                    raise WireError(i, "truncated fixed64")
                value = int.from_bytes(buf[i : i + 8], "little")
                i += 8
            else:
                raise WireError(i, f"wire type {wire} (groups are not used by XLA)")
            found = fields.get(number)
            if found is None:
                fields[number] = [value]
            else:
                found.append(value)
        self.fields = fields

    def has(self, number: int) -> bool:
        return number in self.fields

    def bytes_of(self, value: Value) -> bytes:
        """A length-delimited value's bytes (an int: its decimal digits)."""
        if isinstance(value, int):
            return str(value).encode()
        return self.buf[value[0] : value[1]]

    def message(self, number: int) -> Message | None:
        """The last value of a message field (decoded once)."""
        if number in self._subs:
            return self._subs[number]  # type: ignore[return-value]
        values = self.fields.get(number)
        sub = None if not values else self._sub(values[-1])
        self._subs[number] = sub
        return sub

    def messages(self, number: int) -> list[Message]:
        """Every value of a repeated message field (decoded once)."""
        key = -1 - number  # kept beside the single messages, under keys no field has
        found = self._subs.get(key)
        if found is None:
            found = self._subs[key] = [self._sub(v) for v in self.fields.get(number, ())]  # type: ignore[assignment]
        return found  # type: ignore[return-value]

    def _sub(self, value: Value) -> Message:
        if isinstance(value, int):
            raise WireError(0, "a number where a message was expected")
        return Message(self.buf, value[0], value[1])

    def string(self, number: int) -> str:
        values = self.fields.get(number)
        if not values or isinstance(values[-1], int):
            return ""
        s, e = values[-1]
        return self.buf[s:e].decode("utf-8", "replace")

    def strings(self, number: int) -> list[str]:
        return [
            self.buf[v[0] : v[1]].decode("utf-8", "replace")
            for v in self.fields.get(number, ())
            if not isinstance(v, int)
        ]

    def raw(self, number: int) -> bytes:
        values = self.fields.get(number)
        if not values or isinstance(values[-1], int):
            return b""
        s, e = values[-1]
        return self.buf[s:e]

    def int(self, number: int, default: int = 0) -> int:
        values = self.fields.get(number)
        if not values or not isinstance(values[-1], int):
            return default
        v = values[-1]
        return v - (1 << 64) if v >= 1 << 63 else v

    def bool(self, number: int) -> bool:
        return self.int(number) != 0

    def ints(self, number: int) -> list[int]:
        """A repeated integer field, packed (proto3's default) or not, as signed 64-bit."""
        values = self.fields.get(number)
        if not values:
            return []
        out: list[int] = []
        for v in values:
            if isinstance(v, int):
                out.append(v - (1 << 64) if v >= 1 << 63 else v)
            else:
                out.extend(_packed_varints(self.buf, v[0], v[1]))
        return out

    def floats(self, number: int) -> list[float]:
        return list(self._fixed(number, "<f", 4))

    def doubles(self, number: int) -> list[float]:
        return list(self._fixed(number, "<d", 8))

    def _fixed(self, number: int, fmt: str, size: int) -> Iterator[float]:
        for v in self.fields.get(number, ()):
            if isinstance(v, int):
                yield struct.unpack(fmt, v.to_bytes(size, "little"))[0]
            else:
                if (v[1] - v[0]) % size:
                    raise WireError(v[0], "packed numbers of a length that is not a multiple of their size")
                yield from (x[0] for x in struct.iter_unpack(fmt, self.buf[v[0] : v[1]]))


def _packed_varints(buf: bytes, i: int, end: int) -> list[int]:
    out = []
    while i < end:
        b = buf[i]
        if b < 0x80:
            out.append(b)
            i += 1
        else:
            v, i = _varint(buf, i, end)
            out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return out
