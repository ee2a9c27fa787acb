"""What the agent records of its requests (docs/runtime.md, "Turns and steps: the driver"): the config a step
seeds ``agent/request`` with, the ``request/header`` and ``request/context`` rows (appended only when they
change), and the request invariant's check that the final request equals what the log derives."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_tui.runtime.failures import RequestInvariantError
from dsh_tui.tools.base import ToolSchema

if TYPE_CHECKING:
    from dsh_tui.runtime.agent import Agent
    from dsh_tui.runtime.agent_config import AgentConfig


def _config_facts(cfg: AgentConfig) -> tuple:
    return (cfg.provider, cfg.model, cfg.reasoning_effort, cfg.temperature, cfg.max_tokens)


class RequestRecord:
    """One agent's request bookkeeping: whether this loop instance sent a request yet, the model settings its
    seed was built from, and the last header and context it recorded."""

    __slots__ = ("agent", "requested_once", "seed_facts", "last_header", "last_context")

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.requested_once = False
        self.seed_facts: tuple | None = None
        self.last_header: dict | None = None
        self.last_context: dict | None = None

    def seed_config(self) -> dict:
        cfg = self.agent.config
        facts = _config_facts(cfg)
        if self.requested_once and self.last_header is not None and facts == self.seed_facts:
            return dict(self.last_header["config"])
        # first request of this loop instance, or the host changed the model settings (e.g. a model switch)
        self.seed_facts = facts
        seed: dict[str, Any] = {"provider": cfg.provider, "model": cfg.model}
        effort = cfg.reasoning_effort
        if effort is None:
            prior = self.agent.session.request_header()
            if prior and prior.get("config", {}).get("provider") == cfg.provider \
                    and prior["config"].get("model") == cfg.model \
                    and not (prior.get("adapterDefaults") or {}).get("reasoningEffort") \
                    and prior["config"].get("reasoningEffort"):
                effort = prior["config"]["reasoningEffort"]
        if effort is not None:
            seed["reasoningEffort"] = effort
        if cfg.temperature is not None:
            seed["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            seed["maxTokens"] = cfg.max_tokens
        return seed

    def log(self, config: dict, system: str, tools: list[ToolSchema]) -> dict:
        header: dict[str, Any] = {"config": config}
        if system:
            header["system"] = system
        if tools:
            header["tools"] = tools
        if not self.requested_once:
            prior = self.agent.session.request_header()
            reason = "resume" if prior is not None else "initial"
            self.agent.session.append("request/header", {"header": header, "reason": reason})
            self.requested_once = True
            self.last_context = self.agent.session.request_context()
        elif header != self.last_header:
            self.agent.session.append("request/header", {"header": header, "reason": "change"})
        self.last_header = header
        ctx: dict[str, Any] = {"provider": config["provider"], "model": config["model"]}
        cw = self.agent.context_window(config["model"])
        if cw:
            ctx["contextWindow"] = cw
        if ctx != self.last_context:
            self.agent.session.append("request/context", ctx)
            self.last_context = ctx
        return header

    def check(self, request: dict) -> None:
        derived = self.agent.session.messages_view()
        if request["messages"] != derived:
            raise RequestInvariantError("request messages differ from session.derive_messages()")
        header = self.agent.session.request_header() or {}
        want = {"config": request["config"]}
        if request.get("system"):
            want["system"] = request["system"]
        if request.get("tools"):
            want["tools"] = request["tools"]
        got = {k: header[k] for k in ("config", "system", "tools") if header.get(k)}
        if got != want:
            raise RequestInvariantError("request config/system/tools differ from the latest request/header")
