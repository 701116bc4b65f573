"""Command line of the evaluation (`make eval` runs it with no arguments)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from topicforest.eval import external
from topicforest.eval.dataset import (
    DatasetError,
    back_to_back_pairs,
    default_paths,
    held_out_paths,
    load_conversation,
)
from topicforest.eval.external import EXTERNAL, ExternalSet
from topicforest.eval.external_run import ExternalEvaluation, evaluate_external, external_lines
from topicforest.eval.quick import dev_lines
from topicforest.eval.readme import readme_lines, sync_readme
from topicforest.eval.report import write_report
from topicforest.eval.report_external import External, external_targets
from topicforest.eval.run import Options, run
from topicforest.eval.summary import summary_lines

SHARED = Path(os.environ.get("TOPICFOREST_EVAL_DIR", "../shared/eval"))
README = Path("README.md")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m topicforest.eval",
        description="Compare Topic Forest, flat recursive summarization and truncation on "
        "conversations with planted facts; writes docs/benchmarks.md and PNG plots. Then the "
        f"external set ({EXTERNAL}), in the same report; skipped with a reason when absent.",
    )
    parser.add_argument("conversations", nargs="*", type=Path, help="extra conversation files")
    parser.add_argument(
        "--only",
        action="store_true",
        help=f"evaluate only the files given (default: also {SHARED}/*.json and the sample)",
    )
    parser.add_argument("--budget", type=int, default=2048, help="history budget in tokens")
    parser.add_argument("--out", type=Path, help="report path (default docs/benchmarks.md)")
    parser.add_argument(
        "--model",
        help="opt-in: summarize with this real litellm model instead of the loopback stub "
        "(API key from the environment; not for CI)",
    )
    parser.add_argument("--api-base", help="API base URL for --model")
    parser.add_argument("--no-waiting", action="store_true", help="skip the real-time replay")
    parser.add_argument(
        "--time-scale",
        type=float,
        default=0.1,
        help="real seconds per simulated second in the waiting replay (default 0.1)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="waiting replay: simulated seconds before each user message (default 0)",
    )
    parser.add_argument(
        "--no-pause",
        action="store_true",
        help="quality replay: messages back to back, never idle long enough for the memory's "
        "idle round (default: the user pauses after each reply)",
    )
    parser.add_argument(
        "--no-aider",
        action="store_true",
        help="skip aider's real ChatSummary baseline (run in .venv-aider, built by make eval)",
    )
    parser.add_argument(
        "--no-split",
        action="store_true",
        help="skip the split check (tune engine settings on half the conversations, report "
        "the other half; never run with --model)",
    )
    parser.add_argument(
        "--no-sweep",
        action="store_true",
        help="skip replaying Topic Forest and flat at other budgets (default with --model)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the iteration loop: print compact tables and write no report; skips the waiting "
        "replay, split check, budget sweep, the extractive-summarizer column and the other "
        "pause behaviour",
    )
    parser.add_argument(
        "--back-to-back",
        action="store_true",
        help="replay the dev conversations joined in pairs (1st+2nd, 3rd+4th, ...: a "
        "workspace whose memory holds twice the subjects); implies --quick and --no-external",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="evaluate the project's held-out samples (data/held_out: written by engineers who "
        "had not read the engine; report them, never tune to them); implies --quick, --only "
        "and --no-external",
    )
    only = parser.add_mutually_exclusive_group()
    only.add_argument(
        "--external-only",
        action="store_true",
        help=f"evaluate only the external set ({EXTERNAL}); writes no report",
    )
    only.add_argument("--no-external", action="store_true", help="skip the external set")
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="processes replaying the external set's conversations (default 2)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.back_to_back:
        args.quick = args.no_external = True
    if args.held_out:
        args.quick = args.only = args.no_external = True
    if not 256 <= args.budget <= 1_000_000 or not 0 < args.time_scale <= 1 or args.jobs < 1:
        print(
            "error: --budget must be 256..1000000, --time-scale in (0, 1], --jobs ≥ 1",
            file=sys.stderr,
        )
        return 2
    external_set = _load_external(args)
    if isinstance(external_set, int):
        return external_set
    if args.external_only or args.quick:  # printed only (no report)
        code = 0 if args.external_only else _dev(args, argv, None)
        if code == 0 and external_set is not None:
            _print_external(_run_external(args, external_set))
        return code
    return _dev(args, argv, external_set)


def _dev(
    args: argparse.Namespace, argv: Sequence[str] | None, external_set: ExternalSet | None
) -> int:
    """The dev set; with the report (not --quick), the external set is run and written too."""
    given = [*args.conversations, *(held_out_paths() if args.held_out else [])]
    paths = given if args.only else [*default_paths(SHARED), *given]
    if not paths:
        print("no conversations to evaluate", file=sys.stderr)
        return 2
    if not args.only and not SHARED.is_dir():
        print(f"note: {SHARED} not found; evaluating the bundled sample only", file=sys.stderr)
    try:
        conversations = [load_conversation(p) for p in paths]
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.back_to_back:
        conversations = back_to_back_pairs(conversations)
    quick = args.quick
    options = Options(
        budget=args.budget,
        model=args.model,
        api_base=args.api_base,
        waiting=not (args.no_waiting or quick),
        time_scale=args.time_scale,
        think=args.think,
        pause=not args.no_pause,
        sweep=() if args.no_sweep or args.model or quick else Options.sweep,
        aider=not args.no_aider,
        split=not (args.no_split or quick),
        extractive=not quick,
        alternative=not quick,
    )
    started = time.perf_counter()
    evaluation = run(conversations, options)
    if quick:
        print("\n".join(dev_lines(evaluation)))
        print(f"({time.perf_counter() - started:.0f} s; no report written: --quick)")
        return 0
    print(f"aider: {evaluation.aider_note}")
    external: External = _skipped(args) or "not found"
    if external_set is not None:
        external = _run_external(args, external_set)
        _print_external(external)
    out = args.out or Path("docs/benchmarks-real.md" if args.model else "docs/benchmarks.md")
    plain = argv is None and len(sys.argv) == 1
    command = "make eval" if plain else _command(argv)
    files = write_report(evaluation, out, command, external)
    print("\n".join(summary_lines(evaluation, external_targets(external))))
    print("wrote " + ", ".join(str(f) for f in files))
    block = readme_lines(evaluation, external)
    if plain and args.out is None and sync_readme(block, README):
        print(f"updated {README}'s generated figures")
    else:
        print(f"README figures (copy between the markers of {README}):")
        print("\n".join(block))
    return 0


def _skipped(args: argparse.Namespace) -> str | None:
    """Why the external set is not run, or None."""
    if args.no_external:
        return "--no-external"
    if args.model:
        return "--model (it runs with the stub's summarizer)"
    return external.missing(EXTERNAL)


def _load_external(args: argparse.Namespace) -> ExternalSet | int | None:
    """The external set (loaded before the long dev run, so a damaged one fails first), None
    when it is skipped (said on stderr), or an exit code."""
    reason = _skipped(args)
    if reason:
        if not args.no_external:
            print(f"note: external set skipped: {reason}", file=sys.stderr)
        return None
    try:
        return external.load_external(EXTERNAL)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _run_external(args: argparse.Namespace, data: ExternalSet) -> ExternalEvaluation:
    started = time.perf_counter()
    evaluation = evaluate_external(
        data, args.budget, aider=not args.no_aider, jobs=args.jobs, pause=not args.no_pause
    )
    evaluation.seconds = time.perf_counter() - started
    return evaluation


def _print_external(evaluation: ExternalEvaluation) -> None:
    print("\n" + "\n".join(external_lines(evaluation)))
    print(f"({evaluation.seconds:.0f} s)")


def _command(argv: Sequence[str] | None) -> str:
    words = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python -m topicforest.eval", *(shlex.quote(w) for w in words)])
