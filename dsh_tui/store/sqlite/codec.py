"""The SQLite row codec (docs/format.md, "SQLite storage"): ``data`` is the compact JSON text of the event
data (or of a packed row's data), stored as TEXT below 4 KiB, else zstd level 3 as a BLOB only if that is
smaller; ``surface_op`` is JSON text; ``source_event_seqs`` a varint/zigzag BLOB; packed chunk rows carry
``ignorable = 0``. Also the session header <-> ``sessions`` row mapping."""

from __future__ import annotations

import threading
from typing import Any

import zstandard

from dsh_tui.session.headers import header_in_order

TEXT_LIMIT = 4096
ZSTD_LEVEL = 3
PACK_MAX_MEMBERS = 1024
PACK_MAX_BYTES = 1 << 20


PACKED_TAGS = ("text-chunks", "reasoning-chunks", "tool-call-chunks")




def encode_varint(n: int) -> bytes:
    if n < 0:
        raise ValueError("varint must be non-negative")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _unzigzag(z: int) -> int:
    return z >> 1 if not z & 1 else -((z + 1) >> 1)


def encode_seqs(seqs: list[int]) -> bytes:
    """First seq as unsigned LEB128, then zigzag deltas: ``[19, 20, 4]`` -> ``13 02 1f``."""
    out = bytearray()
    it = iter(seqs)
    for s in it:
        out += encode_varint(s)
        prev = s
        break
    push = out.append
    for s in it:
        d = s - prev
        prev = s
        z = d * 2 if d >= 0 else -d * 2 - 1
        if 0 <= z < 0x80:  # one byte: the common case (consecutive cited seqs give 0x02)
            push(z)
        else:
            out += encode_varint(z)
    return bytes(out)


def decode_seqs(blob: bytes) -> list[int]:
    out: list[int] = []
    i = 0
    n = len(blob)
    if n == 0:
        raise ValueError("empty source_event_seqs blob")
    while i < n:
        value = 0
        shift = 0
        start = i
        while True:
            if i >= n:
                raise ValueError("truncated varint")
            b = blob[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if i - start >= 9:
                raise ValueError("varint longer than 9 bytes")
        if i - start > 1 and blob[i - 1] == 0:
            raise ValueError("non-canonical varint")
        out.append(value if not out else out[-1] + _unzigzag(value))
    return out


_CCTX = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    c = getattr(_CCTX, "c", None)
    if c is None:
        c = _CCTX.c = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return c


def encode_data(text: str) -> str | bytes:
    """JSON text as TEXT below 4 KiB, else a zstd level-3 BLOB when that is smaller."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) < TEXT_LIMIT:
        return text
    packed = _compressor().compress(raw)
    return packed if len(packed) < len(raw) else text


def decode_data(value: Any) -> Any:
    from dsh_tui.session import jsonutil

    if isinstance(value, bytes):
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(value)
        text = raw.decode("utf-8", "surrogatepass")
    elif isinstance(value, str):
        text = value
    else:
        raise ValueError(f"data column has type {type(value).__name__}")
    return jsonutil.loads(text)


def encode_line(line: dict) -> tuple:
    """One logical line (verbatim event or packed row) -> (seq, type, time, data, seqs, surface_op, ignorable)."""
    from dsh_tui.session import jsonutil, rows

    if rows.is_packed_row(line):
        return (line["seq0"], line["type"], line["time0"], encode_data(jsonutil.dumps(line["data"])), None, None, 0)
    seqs = line.get("sourceEventSeqs")
    op = line.get("surfaceOp")
    return (
        line["seq"],
        line["type"],
        line["time"],
        encode_data(jsonutil.dumps(line["data"])),
        encode_seqs(seqs) if seqs is not None else None,
        jsonutil.dumps(op) if op is not None else None,
        1 if line.get("ignorable") is True else None,
    )


def decode_row(row: tuple) -> list[dict]:
    """(seq, type, time, data, seqs, surface_op, ignorable) -> logical events. Raises ValueError on damage."""
    from dsh_tui.session import jsonutil, rows

    seq, typ, time, data, seqs, op, ignorable = row
    if not isinstance(seq, int) or not isinstance(time, int) or not isinstance(typ, str):
        raise ValueError("bad scalar columns")
    payload = decode_data(data)
    if ignorable == 0:
        if typ not in PACKED_TAGS or seqs is not None or op is not None:
            raise ValueError(f"bad packed row at seq {seq}")
        return rows.expand_line({"type": typ, "seq0": seq, "time0": time, "data": payload})
    event: dict = {"type": typ, "seq": seq, "time": time, "data": payload}
    if seqs is not None:
        if not isinstance(seqs, bytes):
            raise ValueError("source_event_seqs is not a BLOB")
        event["sourceEventSeqs"] = decode_seqs(seqs)
    if op is not None:
        event["surfaceOp"] = jsonutil.loads(op)
    if ignorable == 1:
        event["ignorable"] = True
    elif ignorable is not None:
        raise ValueError("bad ignorable column")
    return [event]


def row_last_seq(row: tuple) -> int:
    """Seq of the last logical event in a row, with exactly :func:`decode_row`'s validation (a packed row's
    members are validated but not expanded into event dicts). Raises ValueError (or the decoder's error)."""
    from dsh_tui.session import rows

    seq, typ, time, data, seqs, op, ignorable = row
    if ignorable == 0 and isinstance(seq, int) and isinstance(time, int) and isinstance(typ, str) \
            and typ in PACKED_TAGS and seqs is None and op is None:
        payload = decode_data(data)  # what expand_line would expand: validate, count
        return seq + len(rows.validate_row({"type": typ, "seq0": seq, "time0": time, "data": payload})) - 1
    return decode_row(row)[-1]["seq"]



_HEADER_COLUMNS = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset"


def header_to_row(h: dict) -> tuple:
    return (
        h["id"],
        h["version"],
        h["createdAt"],
        h.get("cwd"),
        h.get("parentSession"),
        h.get("seedLength"),
        h.get("origin"),
        h.get("delegationDepth", 0),
        h.get("agentPreset"),
    )


def row_to_header(r: tuple) -> dict:
    """The header of a ``sessions`` row (the stored version kept: loading refuses another one)."""
    sid, version, created_at, cwd, parent, seed_length, origin, depth, preset = r[:9]
    return header_in_order(sid, created_at, version=version, cwd=cwd, parent_session=parent,
                           seed_length=seed_length, origin=origin,
                           delegation_depth=depth if depth is not None else 0, agent_preset=preset)
