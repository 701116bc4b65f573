"""A separate process that uses the store like a server would (run by the process tests).

    python worker.py MEMORY THREAD COUNT [--maintain] [--forever]

MEMORY is a SQLite path or `postgresql://…#identity` (conftest's `Memory.spec`).

Appends COUNT synthetic messages on THREAD, printing each acknowledged message id on its own
line the moment `append` returns. With --maintain it first waits for the maintenance lease, then
graduates and summarizes after every append, as the lease holder does. --forever keeps going
(until killed) after COUNT.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time

from conftest import open_spec  # this script's directory is on sys.path
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize.extractive import ExtractiveSummarizer

WORDS = [
    ("server/api/invoices.py", "create_invoice", "postgres alembic due_date"),
    ("web/src/InvoiceTable.tsx", "useInvoiceQuery", "react pagination columns"),
    ("infra/docker-compose.yml", "pg_isready", "docker healthcheck volume"),
    ("ml/train.py", "build_dataloader", "torch batch_size cuda"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("memory")
    parser.add_argument("thread")
    parser.add_argument("count", type=int)
    parser.add_argument("--maintain", action="store_true")
    parser.add_argument("--forever", action="store_true")
    args = parser.parse_args()
    store = open_spec(args.memory)
    window = store.open_window()
    summarizer = ExtractiveSummarizer()
    if args.maintain:
        while not store.lease.try_acquire():
            time.sleep(0.05)
        print("lease", flush=True)
    counter = itertools.count() if args.forever else range(args.count)
    for i in counter:
        path, symbol, words = WORDS[(i // 6) % len(WORDS)]
        role = "user" if i % 2 == 0 else "assistant"
        text = f"{args.thread} #{i}: {symbol} in {path} ({words})"
        message = window.append(args.thread, role, text)
        print(message.id, flush=True)
        if args.maintain:
            window.graduate()
            if i % 5 == 4:
                asyncio.run(resolve_round(window, summarizer))
    print("done", flush=True)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
