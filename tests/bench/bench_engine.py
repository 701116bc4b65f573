"""Engine benchmark: append, graduation and render latency at 200 / 2,000 / 10,000 messages.

Run: `make bench` (or `python tests/bench/bench_engine.py`). Prints a table; targets are
append p95 <= 0.1 ms and render p95 <= 1 ms at 10,000 messages. Messages cycle through the bundled
sample conversation with per-cycle identifiers so the vocabulary keeps growing as in real use.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable
from importlib import resources

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize import ExtractiveSummarizer

SIZES = (200, 2_000, 10_000)
RENDERS = 300


def corpus() -> tuple[list[tuple[str, str]], list[str]]:
    data = json.loads(
        resources.files("topicforest.data").joinpath("sample_conversation.json").read_text()
    )
    messages = [(m["role"], m["content"]) for m in data["messages"]]
    questions = [f["question"] for f in data["facts"]] or [m[1][:80] for m in messages[:20]]
    return messages, questions


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    """Milliseconds one call takes."""
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def build(
    n: int, messages: list[tuple[str, str]]
) -> tuple[ContextWindow, list[float], list[float]]:
    window = ContextWindow(WindowConfig(history_budget=2048))
    appends: list[float] = []
    graduations: list[float] = []
    summarizer = ExtractiveSummarizer()
    for i in range(n):
        role, content = messages[i % len(messages)]
        if i >= len(messages):  # later cycles name new things, like a real project does
            content = f"{content} (cycle {i // len(messages)}: item_{i % 97} v{i // 500}.py)"
        appends.append(timed(window.append, "chat", role, content, timestamp=float(i)))
        graduations.append(timed(window.graduate))
        if i % 50 == 49:  # the background resolver, off the measured path
            asyncio.run(resolve_all(window, summarizer))
    asyncio.run(resolve_all(window, summarizer))
    return window, appends, graduations


def main() -> None:
    messages, questions = corpus()
    print(
        f"{'messages':>9} {'append p50/p95 ms':>18} {'graduate p50/p95':>17} "
        f"{'render p50/p95':>15} {'+query p50/p95':>15} {'topics':>6} {'tokens':>7}"
    )
    for n in SIZES:
        tracemalloc.start()  # memory in its own pass: tracing slows everything it watches
        build(n, messages)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        window, appends, graduations = build(n, messages)
        plain = [timed(window.render, thread_id="chat") for _ in range(RENDERS)]
        queried = [
            timed(window.render, query=questions[i % len(questions)], thread_id="chat")
            for i in range(RENDERS)
        ]
        tokens = window.render(thread_id="chat").tokens
        print(
            f"{n:>9} {percentile(appends, 50):>8.4f}/{percentile(appends, 95):<9.4f}"
            f"{percentile(graduations, 50):>8.4f}/{percentile(graduations, 95):<8.4f}"
            f"{percentile(plain, 50):>7.3f}/{percentile(plain, 95):<7.3f}"
            f"{percentile(queried, 50):>7.3f}/{percentile(queried, 95):<7.3f}"
            f"{len(window.forest.live_roots()):>6} {tokens:>7}"
            f"   peak traced memory {peak / 2**20:.1f} MiB"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS of this process: {rss:.0f} MiB (includes the in-memory message log)")
    print(f"mean append {statistics.mean(appends) * 1000:.1f} us at {SIZES[-1]} messages")
    print(
        "graduate = moving overflow from the hot zone into the forest (embedding, nearest "
        "topic, merges);\nit runs in the maintenance process after an append is acknowledged."
    )


if __name__ == "__main__":
    main()
