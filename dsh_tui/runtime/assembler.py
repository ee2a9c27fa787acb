"""The block assembler (docs/runtime.md, "Block assembler"): stream chunks -> assistant content blocks."""

from __future__ import annotations

from typing import Any


class _Partial:
    __slots__ = ("block_type", "parts", "id", "name", "final")

    def __init__(self, block_type: str | None) -> None:
        self.block_type = block_type
        self.parts: list[str] = []
        self.id: str | None = None
        self.name: str | None = None
        self.final: dict | None = None

    def assemble(self) -> dict:
        if self.final is not None:
            return self.final
        bt = self.block_type or "text"
        if bt == "tool-call":
            return {"type": "tool-call", "id": self.id or "", "name": self.name or "", "arguments": "".join(self.parts)}
        return {"type": bt, "text": "".join(self.parts)}


class BlockAssembler:
    def __init__(self) -> None:
        self._blocks: dict[int, _Partial] = {}
        self.usage: dict | None = None
        self.finish: dict | None = None
        self.replay_state: Any = None

    def _get(self, index: int, block_type: str | None) -> _Partial:
        p = self._blocks.get(index)
        if p is None:
            p = self._blocks[index] = _Partial(block_type)
        elif p.block_type is None and block_type is not None:
            p.block_type = block_type
        return p

    def feed(self, chunk: dict) -> None:
        t = chunk.get("type")
        if t == "block-start":
            self._get(chunk["index"], chunk.get("blockType"))
        elif t == "text-delta" or t == "reasoning-delta":
            p = self._get(chunk["index"], "text" if t == "text-delta" else "reasoning")
            if p.final is None:
                p.parts.append(chunk.get("text", ""))
        elif t == "tool-call-delta":
            p = self._get(chunk["index"], "tool-call")
            if p.final is None:
                if chunk.get("id"):
                    p.id = chunk["id"]
                if chunk.get("name"):
                    p.name = chunk["name"]
                p.parts.append(chunk.get("argumentsDelta", ""))
        elif t == "block-end":
            block = chunk.get("block") or {}
            p = self._get(chunk["index"], block.get("type"))
            if p.final is None:
                p.final = block
        elif t == "usage":
            self.usage = chunk.get("usage")
        elif t == "finish":
            self.finish = chunk.get("reason")
            if "replayState" in chunk:
                self.replay_state = chunk["replayState"]

    @property
    def finish_kind(self) -> str:
        return (self.finish or {}).get("kind", "stop")

    def blocks(self) -> list[dict]:
        return self.assembled()[0]

    def assembled(self) -> tuple[list[dict], Any]:
        """(blocks, replay state). On ``max-tokens`` the tool calls are dropped (never run a truncated
        call), and with them their entries of an index-aligned replay envelope (``{response, blocks}``);
        an envelope whose block count does not match is dropped (assembler.ts ``assembled``)."""
        everything = [p.assemble() for p in self._blocks.values()]
        kept = [b.get("type") != "tool-call" for b in everything] if self.finish_kind == "max-tokens" else None
        blocks = everything if kept is None else [b for b, k in zip(everything, kept, strict=True) if k]
        replay = self.replay_state
        meta = replay.get("blocks") if isinstance(replay, dict) else None
        if not isinstance(meta, list):
            return blocks, replay
        if len(meta) != len(everything):
            return blocks, None
        if kept is not None and len(blocks) != len(everything):
            replay = {**replay, "blocks": [m for m, k in zip(meta, kept, strict=True) if k]}
        return blocks, replay

    def interrupted_blocks(self) -> list[dict]:
        out = []
        for p in self._blocks.values():
            b = p.assemble()
            if b.get("type") in ("text", "reasoning") and str(b.get("text", "")).strip():
                out.append(b)
        return out
