"""Provider throughput and first-chunk latency against a local SSE server in another process.

    .venv/bin/python tests/bench/bench_provider.py [--chunks 200000] [--repeats 3]

The server (tests/llm/sse_server.py, a separate process so it does not share our GIL) sends one
pre-rendered DeepSeek-shaped stream of N one-token ``content`` deltas as fast as the socket takes it.
Measured in the same run over the same bytes:

* baseline: bare ``httpx`` ``aiter_lines`` over the response (no SSE parsing, no JSON);
* adapter:  ``OpenAICompatProvider.stream`` (SSE framing, JSON decode, translation to StreamChunks).

Prints chunks/s for both, the adapter/baseline cost ratio (target <= 2.0) as client CPU time (the
server runs in another process, so this is the adapter's own cost and is steady on a busy machine)
and as wall time (best of --repeats), and the median time to the first line / first chunk over small
streams (the latency the adapter adds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dsh_tui.llm._httpx import httpx  # noqa: E402
from dsh_tui.llm.openai import OpenAICompatProvider  # noqa: E402
from tests.llm.sse_server import ScriptServerProcess  # noqa: E402

WORDS = ["the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", "."]


def render_stream(n: int) -> bytes:
    head = '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1780000000,"model":"deepseek-v4-flash",'
    parts = []
    for i in range(n):
        tok = json.dumps(WORDS[i % len(WORDS)])
        parts.append(
            f'data: {head}"choices":[{{"index":0,"delta":{{"content":{tok}}},"logprobs":null,"finish_reason":null}}]}}\n\n'
        )
    usage = f'{{"prompt_tokens":10,"completion_tokens":{n},"prompt_cache_hit_tokens":0}}'
    parts.append(
        f'data: {head}"choices":[{{"index":0,"delta":{{"content":""}},"logprobs":null,"finish_reason":"stop"}}],'
        f'"usage":{usage}}}\n\n'
    )
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def ServerProcess(body: bytes) -> ScriptServerProcess:  # noqa: N802  (bench_titles uses this name too)
    """The scripted server in its own process, sending ``body`` to every POST."""
    return ScriptServerProcess(body=body)


REQUEST = {
    "config": {"provider": "bench", "model": "deepseek-v4-flash"},
    "system": None,
    "tools": [],
    "messages": [
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "go"}], "source": {"kind": "user"}}
    ],
    "sessionId": None,
    "purpose": "turn",
}


async def baseline(
    client: httpx.AsyncClient, url: str, first_only: bool = False
) -> tuple[int, float, float, float]:
    body = json.dumps({"model": "deepseek-v4-flash", "messages": [], "stream": True}).encode()
    c0 = time.process_time()
    t0 = time.perf_counter()
    first = 0.0
    n = 0
    async with client.stream(
        "POST", url + "/chat/completions", content=body, headers={"accept": "text/event-stream"}
    ) as resp:
        async for _line in resp.aiter_lines():
            if n == 0:
                first = time.perf_counter() - t0
            n += 1
            if first_only:
                break
    return n, time.perf_counter() - t0, first, time.process_time() - c0


async def adapter(
    provider: OpenAICompatProvider, first_only: bool = False
) -> tuple[int, float, float, float]:
    c0 = time.process_time()
    t0 = time.perf_counter()
    first = 0.0
    n = 0
    gen = provider.stream(REQUEST)
    try:
        async for _chunk in gen:
            if n == 0:
                first = time.perf_counter() - t0
            n += 1
            if first_only:
                break
    finally:
        await gen.aclose()
    return n, time.perf_counter() - t0, first, time.process_time() - c0


async def measure(chunks: int, repeats: int, latency_runs: int) -> dict:
    big = ServerProcess(render_stream(chunks))
    small = ServerProcess(render_stream(8))
    try:
        client = httpx.AsyncClient(timeout=60, trust_env=False)
        prov_big = OpenAICompatProvider("bench", big.url, lambda: "sk-bench", idle_timeout_s=60)
        prov_small = OpenAICompatProvider("bench", small.url, lambda: "sk-bench", idle_timeout_s=60)
        # Warm both paths (connection set-up, imports, caches).
        await baseline(client, small.url)
        await adapter(prov_small)
        base_times, adapt_times, base_cpu, adapt_cpu = [], [], [], []
        base_lines = adapt_chunks = 0
        for _ in range(repeats):
            base_lines, t, _f, c = await baseline(client, big.url)
            base_times.append(t)
            base_cpu.append(c)
            adapt_chunks, t, _f, c = await adapter(prov_big)
            adapt_times.append(t)
            adapt_cpu.append(c)
        base_first, adapt_first = [], []
        for _ in range(latency_runs):
            base_first.append((await baseline(client, small.url, first_only=True))[2])
            adapt_first.append((await adapter(prov_small, first_only=True))[2])
        await client.aclose()
        await prov_big.aclose()
        await prov_small.aclose()
    finally:
        big.close()
        small.close()
    tb, ta = min(base_times), min(adapt_times)
    cb, ca = min(base_cpu), min(adapt_cpu)
    return {
        "wire_chunks": chunks,
        "baseline_lines": base_lines,
        "adapter_chunks": adapt_chunks,
        "baseline_s": tb,
        "adapter_s": ta,
        "baseline_chunks_per_s": chunks / tb,
        "adapter_chunks_per_s": chunks / ta,
        "ratio": ta / tb,
        "baseline_cpu_s": cb,
        "adapter_cpu_s": ca,
        "cpu_ratio": ca / cb,
        "baseline_first_ms": statistics.median(base_first) * 1000,
        "adapter_first_ms": statistics.median(adapt_first) * 1000,
        "added_first_ms": (statistics.median(adapt_first) - statistics.median(base_first)) * 1000,
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--latency-runs", type=int, default=50)
    args = ap.parse_args(argv)
    r = asyncio.run(measure(args.chunks, args.repeats, args.latency_runs))
    print(f"stream of {r['wire_chunks']:,} content deltas ({r['adapter_chunks']:,} StreamChunks out)")
    print(
        f"  baseline httpx aiter_lines : {r['baseline_s']:.3f} s  {r['baseline_chunks_per_s']:>12,.0f} chunks/s"
    )
    print(
        f"  OpenAICompatProvider       : {r['adapter_s']:.3f} s  {r['adapter_chunks_per_s']:>12,.0f} chunks/s"
    )
    print(
        f"  client CPU time            : baseline {r['baseline_cpu_s']:.3f} s, adapter {r['adapter_cpu_s']:.3f} s"
    )
    print(
        f"  adapter / baseline cost    : {r['cpu_ratio']:.2f}x CPU, {r['ratio']:.2f}x wall  (target <= 2.0x)"
    )
    print(
        f"  first chunk (median of {args.latency_runs}): baseline {r['baseline_first_ms']:.2f} ms, "
        f"adapter {r['adapter_first_ms']:.2f} ms, added {r['added_first_ms']:+.2f} ms"
    )
    return r


if __name__ == "__main__":
    main()
