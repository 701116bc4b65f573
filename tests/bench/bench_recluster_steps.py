"""Re-clustering's longest step between two checks of its time budget.

A server slice of upkeep stops at the first check after its budget, so the step between two
checks is how far a slice can overrun it (and how long a chat request arriving then waits).
Replays the first four conversations of the external set (~800 messages, a full re-clustering
window) with `refine(0)` after every 8 messages, so each call runs exactly one step, and prints
the steps' CPU time (thread time: the machine's other load does not count). Skipped with a
reason where ../shared is absent."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from topicforest.engine.config import WindowConfig
from topicforest.engine.window import ContextWindow

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "external" / "aider17"


def main() -> int:
    files = sorted((SHARED / "conversations").glob("*.json"))[:4]
    if not files:
        print(f"skipped: {SHARED} not found")
        return 0
    messages = [m for f in files for m in json.loads(f.read_text("utf-8"))["messages"]]
    window = ContextWindow(WindowConfig())
    steps: list[float] = []
    for i, message in enumerate(messages):
        window.append("main", message["role"], message["content"], timestamp=1000.0 + i)
        window.graduate()
        if i % 8 == 7:
            while window.refine_pending:
                started = time.thread_time()
                window.refine(budget_seconds=0.0)
                steps.append((time.thread_time() - started) * 1000)
    steps.sort()
    p99 = steps[int(len(steps) * 0.99)]
    print(
        f"re-clustering steps over {len(messages)} messages: {len(steps)} steps, CPU ms "
        f"p50 {statistics.median(steps):.2f} / p99 {p99:.2f} / max {steps[-1]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
