"""Engine benchmark: the chat critical path and upkeep slices at 200 to 100,000 messages.

Run: `make bench` (or `python tests/bench/bench_engine.py [--sizes 10000,100000]`). Each size
runs in a child process of its own, so its peak RSS is its own.

Messages cycle through the bundled sample conversation with per-cycle identifiers so the
vocabulary keeps growing as in real use. Upkeep runs the way `WorkspaceMemory.maintain` does,
interleaved with the appends: `graduate()`, a `refine(0.05)` slice, summaries (the offline
ExtractiveSummarizer, every 50 messages, not timed: a worker thread in the server), then a
`prepare_key_lines(0.05)` slice. Up to 10,000 messages upkeep runs after every append; at
100,000 after every UPKEEP_EVERY_LARGE appends (said in the output), so the build fits in
a few minutes: each slice then has more to do, never less.

Figures, in milliseconds:
- append: `ContextWindow.append` (on the chat path);
- render during the build: a render with no query and one with a fact question as the query,
  every RENDER_EVERY appends, right after upkeep changed the forest (cold caches: what a turn
  meets); the chat turn renders with its question as the query;
- render steady: RENDERS renders of the final window, each way (warm caches);
- upkeep slices: each call's duration; `refine` only when a round was pending (an idle call
  returns at once), `graduate` and `prepare_key_lines` every call. Target: each <= 50 ms;
- peak RSS of the child (resource.getrusage) and, in a second traced build, peak traced memory
  (tracemalloc slows what it watches, so it never runs in the timed build; at 100,000 it is
  skipped unless --traced-large is given: about three times the build time).

Targets: the chat critical path <= 10 ms p99 at 10,000 messages (append + render with query
here is most of it, see bench_server.py for the real process); upkeep slices <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.workspace.upkeep import tidy_heap

SIZES = (200, 2_000, 10_000, 100_000)
LARGE = 50_000  # from this size on, upkeep runs every UPKEEP_EVERY_LARGE appends
UPKEEP_EVERY_LARGE = 4
RENDER_EVERY = 50
RENDERS = 300
SLICE_SECONDS = 0.05  # memory.RECLUSTER_SLICE_SECONDS


def corpus() -> tuple[list[tuple[str, str]], list[str]]:
    data = json.loads(
        resources.files("topicforest.data").joinpath("sample_conversation.json").read_text()
    )
    messages = [(m["role"], m["content"]) for m in data["messages"]]
    questions = [f["question"] for f in data["facts"]] or [m[1][:80] for m in messages[:20]]
    return messages, questions


def percentile(samples: list[float], p: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    """Milliseconds one call takes."""
    start = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


@dataclass
class Result:
    size: int
    upkeep_every: int
    build_seconds: float = 0.0
    append: list[float] = field(default_factory=list)
    graduate: list[float] = field(default_factory=list)
    refine: list[float] = field(default_factory=list)
    key_lines: list[float] = field(default_factory=list)
    render_cold: list[float] = field(default_factory=list)
    query_cold: list[float] = field(default_factory=list)
    render: list[float] = field(default_factory=list)
    query: list[float] = field(default_factory=list)
    rounds: int = 0
    topics: int = 0
    tokens: int = 0
    rss_mib: float = 0.0
    traced_mib: float | None = None


def build(n: int, messages: list[tuple[str, str]], questions: list[str], result: Result) -> None:
    window = ContextWindow(WindowConfig(history_budget=2048))
    summarizer = ExtractiveSummarizer()
    every = result.upkeep_every
    start = time.perf_counter()
    for i in range(n):
        role, content = messages[i % len(messages)]
        if i >= len(messages):  # later cycles name new things, like a real project does
            content = f"{content} (cycle {i // len(messages)}: item_{i % 97} v{i // 500}.py)"
        result.append.append(timed(window.append, "chat", role, content, timestamp=float(i)))
        if i % every == every - 1:  # upkeep, in WorkspaceMemory.maintain's order
            result.graduate.append(timed(window.graduate))
            if window.refine_pending:
                result.refine.append(timed(window.refine, SLICE_SECONDS))
            if i % 50 >= 50 - every:  # the background resolver, not timed
                asyncio.run(resolve_all(window, summarizer))
            result.key_lines.append(timed(window.prepare_key_lines, SLICE_SECONDS))
            tidy_heap()  # as the server does after each upkeep round (untimed)
        if i % RENDER_EVERY == RENDER_EVERY - 1:  # a turn right after upkeep: cold caches
            result.render_cold.append(timed(window.render, thread_id="chat"))
            question = questions[(i // RENDER_EVERY) % len(questions)]
            result.query_cold.append(timed(window.render, query=question, thread_id="chat"))
    result.build_seconds = time.perf_counter() - start
    result.render = [timed(window.render, thread_id="chat") for _ in range(RENDERS)]
    result.query = [
        timed(window.render, query=questions[i % len(questions)], thread_id="chat")
        for i in range(RENDERS)
    ]
    result.rounds = window.refiner.rounds
    result.topics = len(window.forest.live_roots())
    result.tokens = window.render(thread_id="chat").tokens


def child(n: int, traced: bool) -> None:
    """One size, in this process; prints its Result as JSON on the last line."""
    messages, questions = corpus()
    every = UPKEEP_EVERY_LARGE if n >= LARGE else 1
    result = Result(n, every)
    build(n, messages, questions, result)
    result.rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if traced:
        tracemalloc.start()
        build(n, messages, questions, Result(n, every))
        result.traced_mib = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    print(json.dumps(asdict(result)))


def three(samples: list[float], ps: tuple[float, ...] = (50, 95, 99)) -> str:
    return "/".join(f"{percentile(samples, p):.3f}" for p in ps)


def report(r: Result) -> None:
    every = "every append" if r.upkeep_every == 1 else f"every {r.upkeep_every} appends"
    traced = f"{r.traced_mib:.1f} MiB" if r.traced_mib is not None else "not measured"
    print(
        f"\n{r.size:,} messages: build {r.build_seconds:.1f} s, upkeep {every}, "
        f"{r.rounds} re-clustering rounds, {r.topics} topics, plain render {r.tokens} tokens; "
        f"peak RSS {r.rss_mib:.0f} MiB, peak traced {traced}"
    )
    print(f"  {'ms':<34} {'p50/p95/p99':>22} {'max':>8} {'calls':>7}")
    rows = [
        ("append", r.append),
        ("render, no query (after upkeep)", r.render_cold),
        ("render, query (after upkeep)", r.query_cold),
        ("render, no query (steady)", r.render),
        ("render, query (steady)", r.query),
        ("upkeep graduate()", r.graduate),
        ("upkeep refine(0.05) (pending)", r.refine),
        ("upkeep prepare_key_lines(0.05)", r.key_lines),
    ]
    for name, samples in rows:
        worst = max(samples, default=0)
        print(f"  {name:<34} {three(samples):>22} {worst:>8.3f} {len(samples):>7}")
    over = [name for name, s in rows[5:] if s and max(s) > SLICE_SECONDS * 1000 * 1.2]
    if over:
        print(f"  upkeep slices over 60 ms: {', '.join(over)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--traced-large", action="store_true", help="also trace memory at >= 50,000 messages"
    )
    args = parser.parse_args()
    if args.child:
        child(args.child, args.traced)
        return
    print(
        f"upkeep as WorkspaceMemory.maintain: graduate, refine({SLICE_SECONDS}), summaries "
        f"(every 50 messages, untimed), prepare_key_lines({SLICE_SECONDS}); after every append "
        f"below {LARGE:,} messages, after every {UPKEEP_EVERY_LARGE} appends from {LARGE:,} on"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        command = [sys.executable, __file__, "--child", str(n)]
        if n < LARGE or args.traced_large:
            command.append("--traced")
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        report(Result(**json.loads(out.strip().splitlines()[-1])))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
