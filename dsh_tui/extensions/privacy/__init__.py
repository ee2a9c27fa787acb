"""dsh 0.2's DeepSeek request extensions, off unless ``[privacy]`` turns them on (built-in ``deepseek-extensions``).

dsh 0.2 puts two extra fields in every request body it sends DeepSeek: ``dsh_session_log`` (the session's
events, incrementally: those after the last accepted upload, at most 8 MiB; its ``session-log-deepseek``
plugin) and ``dsh_plugin_packages`` (the packages of the active plugins; ``plugin-package-inventory-deepseek``).
dsh-tui sends neither unless the user sets ``[privacy] send_session_log = true`` /
``send_plugin_packages = true``, and then only on DeepSeek's own route over the Messages wire (the route
dsh sends them on), in dsh 0.2's shape.

One difference: dsh records each accepted upload in the log (``session-log-deepseek/delivery-accepted``) so a
restart resumes the upload where it stopped; dsh-tui keeps the watermark in memory, so after a restart the
log is sent again from its first event (what dsh does for a log without acceptance records).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

name = "deepseek-extensions"
MAX_BYTES = 8 * 1024 * 1024  # dsh's session-log-deepseek maxBytes default
_HEADER_KEYS = ("origin", "delegationDepth", "agentPreset")


def wanted(config: Any) -> dict[str, bool]:
    privacy = config.get("privacy") if isinstance(config, Mapping) else None
    privacy = privacy if isinstance(privacy, Mapping) else {}
    return {"session_log": privacy.get("send_session_log") is True,
            "plugin_packages": privacy.get("send_plugin_packages") is True}


def needed(config: Any) -> bool:
    """Whether the plugin has anything to do (else its module is never imported)."""
    return any(wanted(config).values())


def apply(ctx: Any, config: Any) -> None:
    on = wanted(config)
    if on["session_log"]:
        remove = ctx.agent.request_extension("dsh_session_log", SessionLog(ctx.session).prepare)
        if remove is not None:
            ctx.effect(lambda: remove)
    if on["plugin_packages"]:
        remove = ctx.agent.request_extension("dsh_plugin_packages", PluginPackages(ctx).prepare)
        if remove is not None:
            ctx.effect(lambda: remove)


def _json_bytes(value: Any) -> int:
    return len(orjson.dumps(value))


def wire_header(header: Mapping[str, Any], seed_length: int | None = None) -> dict[str, Any]:
    """The session header as dsh's ``wireHeader`` sends it."""
    out: dict[str, Any] = {"version": header.get("version", 0), "id": str(header.get("id")),
                           "createdAt": header.get("createdAt")}
    if header.get("cwd") is not None:
        out["cwd"] = header["cwd"]
    if header.get("parentSession") is not None:
        out["parentSession"] = str(header["parentSession"])
    if header.get("isSeeded") and seed_length is not None:
        out["seedLength"] = seed_length
    for key in _HEADER_KEYS:
        if header.get(key) is not None:
            out[key] = header[key]
    return out


def wire_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """One event as dsh's ``wireEvent`` sends it: seq, time, data, [ignorable], type, [surfaceOp, sourceEventSeqs]."""
    out: dict[str, Any] = {"seq": event.get("seq"), "time": event.get("time"), "data": event.get("data")}
    if event.get("ignorable") is not None:
        out["ignorable"] = event["ignorable"]
    out["type"] = event.get("type")
    if event.get("surfaceOp") is not None:
        out["surfaceOp"] = event["surfaceOp"]
    if event.get("sourceEventSeqs") is not None:
        out["sourceEventSeqs"] = event["sourceEventSeqs"]
    return out


class SessionLog:
    """``dsh_session_log``: the events after the last accepted upload, within ``max_bytes``."""

    def __init__(self, session: Any, max_bytes: int = MAX_BYTES) -> None:
        self.session = session
        self.max_bytes = max_bytes
        self.accepted_through = -1

    def prepare(self, request: dict[str, Any]) -> dict[str, Any] | None:
        if request.get("sessionId") != self.session.id:
            return None  # another agent's request on a shared provider
        header = self.session.header
        after = self.accepted_through
        pending = [e for e in self.session.events if isinstance(e.get("seq"), int) and e["seq"] > after]
        envelope = {"version": 1, "sessionFormatVersion": header.get("version", 0),
                    "session": wire_header(header), "afterSeq": after}
        size = _json_bytes({**envelope, "throughSeq": 0, "events": []}) - 1
        events: list[dict[str, Any]] = []
        for event in pending:
            wire = wire_event(event)
            nxt = size + (0 if not events else 1) + _json_bytes(wire)
            if nxt + len(str(event["seq"])) > self.max_bytes:
                break
            size = nxt
            events.append(wire)
        if not events:
            return None
        through = events[-1]["seq"]

        def accept() -> None:
            self.accepted_through = max(self.accepted_through, through)

        return {"value": {**envelope, "throughSeq": through, "events": events}, "accept": accept}


class PluginPackages:
    """``dsh_plugin_packages``: ``{version: 1, packages: [{name, version?}]}``, the distributions the active
    plugins come from (the built-ins: ``dsh-tui``), sorted by name then version, each once."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    def prepare(self, request: dict[str, Any]) -> dict[str, Any] | None:
        return {"value": {"version": 1, "packages": self.packages()}}

    def packages(self) -> list[dict[str, str]]:
        from importlib import metadata

        dists = None
        unique: dict[tuple[str, str], dict[str, str]] = {}
        for record in self.ctx.agent.plugins:
            if record["state"] != "loaded":
                continue
            if record["source"] == "builtin":
                names = ["dsh-tui"]
            else:
                module = record["target"].partition(":")[0].split(".")[0]
                if not module:
                    continue  # a plugin object handed over directly: no package identity known
                if dists is None:
                    dists = metadata.packages_distributions()
                names = dists.get(module, [])
            for dist in names[:1]:
                try:
                    version = metadata.version(dist)
                except metadata.PackageNotFoundError:
                    continue
                identity = {"name": dist, "version": version} if version else {"name": dist}
                unique[(dist, version or "")] = identity
        return [unique[k] for k in sorted(unique)]
