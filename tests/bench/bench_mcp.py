"""MCP overhead (run: ``.venv/bin/python tests/bench/bench_mcp.py [CALLS] [ROUNDS]`` or ``--startup RUNS``).

1. CALLS (default 300) calls of the test server's ``echo`` over stdio (tests/mcp/server.py), in the same
   run, rounds alternating (ROUNDS, default 5; medians): a bare ``mcp`` ``ClientSession.call_tool`` on its
   own connection vs the same call through the harness, timed from the ``tool/call`` append to the
   ``tool/result`` append of an agent step (pre-execute, the mcp plugin's bridge, argument validation,
   the ``tools/call`` round trip, dsh's result conversion, post-execute, the result event).
   Target: harness <= 1.2x bare + 2 ms.
2. ``--startup RUNS``: ``dsh-tui run`` (the chat, a key set so the harness opens) to its first paint with
   three MCP servers configured in settings.toml (two test servers and one that never answers) vs none,
   RUNS fresh processes each, interleaved (target: within 10 ms). Uses the frame log of bench_ui_long.py.
3. ``--instructions``: the same two start-ups counted in instructions from process start to the first frame
   (valgrind callgrind, every thread; nearly deterministic where times on a shared machine are not).
4. ``--first-request``: when the first model request goes out and whether it offers the MCP tools, with a
   working server, a server slow to start (1.5 s) and one that never answers (``startup_timeout_ms`` 2000):
   the request waits for the first two and costs at most the timeout for the third.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SERVER = [sys.executable, str(REPO / "tests" / "mcp" / "server.py"), "stdio"]


async def bare_calls(n: int) -> list[float]:
    """``n`` sequential ``call_tool("echo")`` on a bare SDK session: seconds per call."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    times: list[float] = []
    with open("/dev/null", "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await session.call_tool("echo", {"text": "warm"})
            for i in range(n):
                t = time.perf_counter()
                result = await session.call_tool("echo", {"text": f"call {i}"})
                times.append(time.perf_counter() - t)
                assert result.content[0].text == f"echo: call {i}"
    return times


async def harness_calls(n: int) -> dict:
    """``n`` agent steps each calling ``mcp__t__echo``: seconds from ``tool/call`` to ``tool/result``."""
    from dsh_tui.llm import scripted
    from dsh_tui.llm.scripted import ScriptedProvider
    from dsh_tui.runtime import Agent, AgentConfig
    from dsh_tui.runtime.plugins import Plugins, builtin_specs
    from dsh_tui.session.headers import make_header
    from dsh_tui.session.log import Session

    specs = builtin_specs()
    for spec in specs:
        if spec.id == "mcp":
            spec.config = {"settings": {"servers": {"t": {"command": SERVER[0], "args": SERVER[1:]}}}, "cli": ()}
    responses = [scripted.call(f"w{i}", "mcp__t__echo", {"text": "warm"}) for i in range(1)]
    responses += [scripted.call(f"c{i}", "mcp__t__echo", {"text": f"call {i}"}) for i in range(n)]
    responses.append(scripted.text("done"))
    session = Session(make_header("bench-mcp", cwd=str(REPO), created_at=1))
    agent = Agent(session, ScriptedProvider(responses, name="mock", record=False), [],
                  config=AgentConfig(model="m", runtime_context=False, check_requests=False, compaction=False,
                                     preset="full-access", cwd=str(REPO)),
                  plugins=Plugins(specs, strict=True))
    started: dict[str, float] = {}
    times: list[float] = []

    def observe(_session, event) -> None:
        if event["type"] == "tool/call":
            started[event["data"]["callId"]] = time.perf_counter()
        elif event["type"] == "tool/result":
            call_id = event["data"]["message"]["content"][0]["toolCallId"]
            if call_id.startswith("c"):
                times.append(time.perf_counter() - started[call_id])

    session.subscribe(observe)
    while agent.mcp.get("t").state != "ready":
        await asyncio.sleep(0.01)
    t = time.perf_counter()
    agent.followup("go")
    await agent.wait_idle()
    wall = time.perf_counter() - t
    texts = [e["data"]["message"]["content"][0]["content"][0]["text"] for e in session.events
             if e["type"] == "tool/result"]
    assert texts[1:] == [f"echo: call {i}" for i in range(n)], texts[:3]
    await agent.dispose()
    return {"times": times, "wall": wall, "calls": n}


async def compare(n: int, rounds: int) -> dict:
    bare: list[float] = []
    harness: list[float] = []
    for _ in range(rounds):
        bare.append(statistics.median(await bare_calls(n)))
        harness.append(statistics.median((await harness_calls(n))["times"]))
    b, h = statistics.median(bare) * 1000, statistics.median(harness) * 1000
    return {"bare_ms": b, "harness_ms": h, "limit_ms": 1.2 * b + 2, "rounds": rounds, "calls": n}


def _startup_setup() -> tuple[object, Path, str]:
    import json
    import os

    from tests.bench import bench_ui_long as ui

    env = ui.child_env()
    config = Path(env["XDG_CONFIG_HOME"]) / "dsh-tui"
    config.mkdir(parents=True, exist_ok=True)
    os.environ.update(DEEPSEEK_API_KEY="sk-bench-not-real", DEEPSEEK_BASE_URL="http://127.0.0.1:9")
    server = f"command = {json.dumps(SERVER[0])}\nargs = {json.dumps(SERVER[1:])}\n"
    settings = (f"[mcp.servers.a]\n{server}[mcp.servers.b]\n{server}"
                f"[mcp.servers.never]\n{server}env = {{ MCP_TEST_HANG = \"1\" }}\n")
    return ui, config, settings


def instructions() -> None:
    import subprocess

    ui, config, settings = _startup_setup()
    counts: dict[str, float] = {}
    for name, text in (("none", ""), ("3 MCP servers", settings)):
        (config / "settings.toml").write_text(text)
        env = {**ui.child_env(), "DSH_BENCH_FIRST_FRAME_EXIT": "1", "PYTHONHASHSEED": "0"}
        proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", ui.CHILD["python"],
                               ui.__file__, "--child", "cli", repr(time.perf_counter()), "run"],
                              capture_output=True, text=True, env=env, timeout=1800)
        found = [line for line in proc.stderr.splitlines() if "Collected" in line]
        if not found:
            raise RuntimeError(f"callgrind run ({name}) failed:\n{proc.stderr[-3000:]}")
        counts[name] = int(found[-1].split()[-1]) / 1e6
    print("dsh-tui run, instructions from process start to the first frame (callgrind, every thread, millions):")
    for name, n in counts.items():
        print(f"  {name:16s} {n:8.1f} M")
    print(f"  difference {counts['3 MCP servers'] - counts['none']:+.1f} M")


def startup(runs: int) -> None:
    ui, config, settings = _startup_setup()
    firsts: dict[str, list[float]] = {"none": [], "3 MCP servers": []}
    for i in range(runs):
        for name in list(firsts)[:: 1 if i % 2 == 0 else -1]:  # alternate which goes first
            (config / "settings.toml").write_text(settings if name != "none" else "")
            firsts[name].append(ui.spawn("cli", "run")["first_paint"] * 1000)
            time.sleep(1.0)  # the servers of a run end after it: not during the next one's start
    none, three = statistics.median(firsts["none"]), statistics.median(firsts["3 MCP servers"])
    print(f"dsh-tui run to its first paint, median of {runs} fresh processes each, interleaved:")
    for name, values in firsts.items():
        print(f"  {name:16s} {statistics.median(values):5.0f} ms   (range {min(values):.0f}-{max(values):.0f})")
    print(f"  difference {three - none:+.0f} ms (target within 10 ms)")


async def first_request() -> list[tuple[str, float, bool]]:
    """(case, seconds from the prompt to the first request, whether it offered the server's tools)."""
    from dsh_tui.llm import scripted
    from dsh_tui.llm.scripted import ScriptedProvider
    from dsh_tui.runtime import Agent, AgentConfig
    from dsh_tui.runtime.plugins import Plugins, builtin_specs
    from dsh_tui.session.headers import make_header
    from dsh_tui.session.log import Session

    hostile = str(REPO / "tests" / "mcp" / "hostile.py")
    cases = {"ready server": {"command": sys.executable, "args": [hostile, "echo"]},
             "server slow to start (1.5 s)": {"command": sys.executable, "args": [hostile, "slowstart", "1500"]},
             "server that never answers (timeout 2 s)": {"command": sys.executable, "args": [hostile, "noinit"],
                                                          "startup_timeout_ms": 2000}}
    out = []
    for case, cfg in cases.items():
        specs = builtin_specs()
        for spec in specs:
            if spec.id == "mcp":
                spec.config = {"settings": {"servers": {"s": cfg}}, "cli": ()}
        provider = ScriptedProvider([scripted.text("ok")], name="mock")
        agent = Agent(Session(make_header("bench-first", cwd=str(REPO), created_at=1)), provider, [],
                      config=AgentConfig(model="m", runtime_context=False, compaction=False, cwd=str(REPO)),
                      plugins=Plugins(specs, strict=True))
        t = time.perf_counter()
        agent.followup("use the tool")
        while not provider.requests:
            await asyncio.sleep(0.005)
        took = time.perf_counter() - t
        offered = any(tool["name"].startswith("mcp__s__") for tool in provider.requests[0].get("tools") or [])
        await agent.wait_idle()
        await agent.dispose()
        out.append((case, took, offered))
    return out


def main(argv: list[str]) -> None:
    if argv[:1] == ["--first-request"]:
        print("the first model request with one MCP server configured (a fresh agent each):")
        for case, took, offered in asyncio.run(first_request()):
            print(f"  {case:42s} {took * 1000:6.0f} ms   tools offered: {'yes' if offered else 'no'}")
        return
    if argv[:1] == ["--startup"]:
        startup(int(argv[1]) if len(argv) > 1 else 9)
        return
    if argv[:1] == ["--instructions"]:
        instructions()
        return
    n = int(argv[0]) if argv else 300
    rounds = int(argv[1]) if len(argv) > 1 else 5
    out = asyncio.run(compare(n, rounds))
    print(f"MCP echo over stdio, {n} calls x {rounds} rounds (medians):")
    print(f"  bare ClientSession.call_tool   {out['bare_ms']:.3f} ms")
    print(f"  through the harness            {out['harness_ms']:.3f} ms  "
          f"(target <= 1.2x + 2 ms = {out['limit_ms']:.3f} ms: {'met' if out['harness_ms'] <= out['limit_ms'] else 'MISSED'})")


if __name__ == "__main__":
    main(sys.argv[1:])
