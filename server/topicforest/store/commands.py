"""CLI: `topicforest topics | export | import | fork` for people and scripts, on a workspace's
SQLite memory or, with `--store-url`, its repository's team memory (export one, import it into
the other: a local memory moves to the team)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from topicforest.store.errors import StoreError
from topicforest.store.paths import store_path
from topicforest.store.store import Store
from topicforest.store.transfer import export_memory, fork_memory, import_memory


def register(subparsers: Any) -> None:
    topics = subparsers.add_parser("topics", help="list a workspace's remembered topics")
    add_location(topics)
    topics.set_defaults(func=_guarded(cmd_topics))

    export = subparsers.add_parser("export", help="write a workspace memory as JSON")
    add_location(export)
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    export.set_defaults(func=_guarded(cmd_export))

    imp = subparsers.add_parser("import", help="load a JSON export into an empty memory")
    add_location(imp)
    imp.add_argument("file", help="export file, or - for standard input")
    imp.set_defaults(func=_guarded(cmd_import))

    fork = subparsers.add_parser("fork", help="copy a workspace memory into a new one")
    add_location(fork)
    fork.add_argument("--to", required=True, help="workspace folder the copy belongs to")
    fork.add_argument("--to-store-path", help="directory for the copy (default: as the source)")
    fork.set_defaults(func=_guarded(cmd_fork))


def add_location(parser: argparse.ArgumentParser) -> None:
    """The options that name a workspace's memory (every command that opens one takes them)."""
    parser.add_argument("--workspace", default=".", help="workspace folder (default: current)")
    parser.add_argument("--store-path", help="memory directory (topicForest.storePath)")
    parser.add_argument(
        "--store-url",
        help="the team memory's PostgreSQL (topicForest.storeUrl; password from PGPASSWORD or "
        "~/.pgpass)",
    )


def _guarded(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(command(args))
        except (StoreError, OSError, ValueError) as exc:
            print(f"topicforest {args.command}: {exc}", file=sys.stderr)
            return 1

    return run


def _existing(args: argparse.Namespace) -> Store:
    """The workspace's memory, if it holds one (asking a team database creates the
    repository's empty schema, as an editor window would)."""
    where = Path(args.workspace).resolve()
    if args.store_url:
        store = _opened(args)
        if store.is_empty():
            store.close()
            raise StoreError(f"no team memory stored for {where} in {store.where}")
        return store
    path = store_path(args.workspace, args.store_path)
    if not path.exists():
        raise StoreError(f"no memory stored for {where} (looked for {path})")
    return Store(path)


def _opened(args: argparse.Namespace) -> Store:
    """The workspace's memory, created if it has none (the team memory: its repository's)."""
    return Store.for_workspace(args.workspace, args.store_path, url=args.store_url)


def cmd_topics(args: argparse.Namespace) -> int:
    store = _existing(args)
    window = store.open_window()
    rows = [("ID", "MSGS", "TOKENS", "STATE", "TITLE")]
    for t in window.topics():
        state = ",".join(
            flag
            for flag, on in (("dropped", t.dropped), ("pinned", t.pinned),
                             ("expanded", t.expanded), ("pending", t.pending))
            if on
        )  # fmt: skip
        rows.append((str(t.id), str(t.message_count), str(t.source_tokens), state or "-", t.title))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(c.rjust(w) if i < 3 else c.ljust(w) for i, (c, w) in
                        enumerate(zip(row, widths, strict=False))) + "  " + row[4])  # fmt: skip
    hot = sum(len(zone) for zone in window.hot.values())
    print(f"{len(rows) - 1} topics, {hot} recent messages not yet in a topic, {store.where}")
    store.close()
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    store = _existing(args)
    text = json.dumps(export_memory(store), ensure_ascii=False, indent=1)
    store.close()
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{args.file} is not JSON: {exc}") from exc
    except RecursionError:
        raise StoreError(f"{args.file} is nested too deeply to be an export") from None
    store = _opened(args)
    count = import_memory(store, data)
    print(f"imported {count} messages into {store.where}")
    store.close()
    return 0


def cmd_fork(args: argparse.Namespace) -> int:
    if args.store_url:
        raise StoreError("fork copies a SQLite memory; export the team memory and import it")
    source = _existing(args)
    target_path = store_path(args.to, args.to_store_path or args.store_path)
    target = fork_memory(source, target_path, str(Path(args.to).resolve()))
    print(f"forked {source.where} -> {target.where}")
    source.close()
    target.close()
    return 0
