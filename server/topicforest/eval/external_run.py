"""Replay the external set as the dev-set eval replays its conversations, and print the table.

Each conversation goes through `run_topic_forest` (the engine's window with the memory's upkeep)
at the eval's budget with the stub's independent lead-sentence summarizer, the user pausing after
each reply as in the dev-set eval; aider's real ChatSummary runs on the same summarizer when its
venv is there. Conversations are independent, so they replay in up to `jobs` processes, each with
its own loopback stub.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from topicforest.engine.llm import load_litellm
from topicforest.engine.summarize.base import QUOTE
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.eval.aider_baseline import AiderJob, AiderUnavailable, check_aider, run_aider
from topicforest.eval.dataset import Conversation
from topicforest.eval.external import UPSTREAM, ExternalSet
from topicforest.eval.metrics import contains_all
from topicforest.eval.run import STUB_SUMMARY_MODEL
from topicforest.eval.systems import run_topic_forest
from topicforest.testing.stub_llm import STUB_API_KEY, StubLLM


@dataclass
class ExternalResult:
    id: str
    messages: int
    questions: int  # answerable ones
    kept_query: int  # the question as the query
    kept_plain: int  # no query
    topics: int  # live topics at the end
    in_topics: int  # messages in those topics (the rest are in the hot zone)
    largest: int  # messages in the largest topic
    empty_lines: int  # empty summary lines over the no-query render and every query render
    seconds: float  # replay time
    aider: int | None = None  # kept by aider's ChatSummary (None: not run)

    @property
    def largest_share(self) -> float:
        return self.largest / max(1, self.messages)


@dataclass
class ExternalEvaluation:
    data: ExternalSet
    budget: int
    results: list[ExternalResult] = field(default_factory=list)
    aider_note: str = ""
    seconds: float = 0.0  # wall time of the whole external run

    def pooled(self, kept: str) -> tuple[int, int]:
        pairs = [(getattr(r, kept), r.questions) for r in self.results]
        return sum(k or 0 for k, _ in pairs), sum(n for _, n in pairs)

    def worst(self, kept: str) -> ExternalResult:
        return min(self.results, key=lambda r: (getattr(r, kept) or 0) / max(1, r.questions))


def empty_summary_lines(text: str) -> int:
    """Quoted lines with nothing after the quote prefix (`| `). The external set's messages
    have no blank lines, so on it every such line is an empty line of a rendered summary."""
    return sum(1 for line in text.splitlines() if line.rstrip() == QUOTE.rstrip())


async def replay(
    conv: Conversation, summarizer: LiteLLMSummarizer, budget: int, pause: bool = True
) -> ExternalResult:
    started = time.perf_counter()
    forest = await run_topic_forest(conv, summarizer, budget, idle_after_reply=pause)
    by_fact = forest.context_by_fact
    sizes = [t.messages for t in forest.topics]
    renders = [forest.context_no_query, *by_fact.values()]
    return ExternalResult(
        id=conv.id,
        messages=len(conv.messages),
        questions=len(conv.facts),
        kept_query=sum(contains_all(by_fact[f.id], f.must_contain) for f in conv.facts),
        kept_plain=sum(contains_all(forest.context_no_query, f.must_contain) for f in conv.facts),
        topics=len(sizes),
        in_topics=sum(sizes),
        largest=max(sizes, default=0),
        empty_lines=sum(empty_summary_lines(text) for text in renders),
        seconds=time.perf_counter() - started,
    )


async def _replay_with_stub(conv: Conversation, budget: int, pause: bool) -> ExternalResult:
    async with StubLLM() as stub:
        summarizer = LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=stub.base_url)
        return await replay(conv, summarizer, budget, pause)


def _replay_alone(conv: Conversation, budget: int, pause: bool) -> ExternalResult:
    """One conversation in a worker process, with its own stub."""
    os.environ.setdefault("OPENAI_API_KEY", STUB_API_KEY)  # litellm wants one; the stub ignores
    load_litellm()  # imported once per process, outside the replay's own time
    return asyncio.run(_replay_with_stub(conv, budget, pause))


def evaluate_external(
    data: ExternalSet, budget: int = 2048, *, aider: bool = True, jobs: int = 2, pause: bool = True
) -> ExternalEvaluation:
    convs = data.conversations
    if jobs <= 1:
        results = [_replay_alone(c, budget, pause) for c in convs]
    else:
        spawn = multiprocessing.get_context("spawn")  # no inherited event loop or threads
        with ProcessPoolExecutor(max_workers=jobs, mp_context=spawn) as pool:
            n = len(convs)
            results = list(pool.map(_replay_alone, convs, [budget] * n, [pause] * n))
    evaluation = ExternalEvaluation(data, budget, results)
    if aider:
        evaluation.aider_note = asyncio.run(_add_aider(evaluation))
    else:
        evaluation.aider_note = "aider's ChatSummary not run (--no-aider)"
    return evaluation


async def _add_aider(evaluation: ExternalEvaluation) -> str:
    """aider's real ChatSummary on every conversation with the same stub summarizer."""
    convs = evaluation.data.conversations
    model = STUB_SUMMARY_MODEL.split("/", 1)[1]
    try:
        version = await check_aider()
        async with StubLLM() as stub:
            jobs = [AiderJob(c, model, evaluation.budget) for c in convs]
            runs = await run_aider(jobs, stub.base_url, STUB_API_KEY)
    except AiderUnavailable as exc:
        return f"aider's ChatSummary column omitted: {exc}"
    for result, conv, run in zip(evaluation.results, convs, runs, strict=True):
        result.aider = sum(contains_all(run.context, f.must_contain) for f in conv.facts)
    return f"aider-chat {version}"


def external_lines(evaluation: ExternalEvaluation) -> list[str]:
    """The compact table: per conversation, pooled and worst."""
    data = evaluation.data
    has_aider = any(r.aider is not None for r in evaluation.results)
    lines = [
        f"external set: {len(data.conversations)} conversations, {data.answerable} of "
        f"{data.questions} questions answerable (left out: "
        + ", ".join(f"{u.conversation}/{u.question} {u.answer!r}" for u in data.unanswerable)
        + f"); {evaluation.budget} tokens, independent lead-sentence summarizer",
        f"aider: {evaluation.aider_note}",
        "",
        f"{'conversation':26}{'query':>8}{'no query':>10}{'aider':>8}{'topics':>8}"
        f"{'in topics':>11}{'largest':>9}{'empty':>7}{'secs':>7}",
    ]

    def cell(kept: int | None, total: int) -> str:
        return "–" if kept is None else f"{100 * kept / max(1, total):.0f}%"

    for r in evaluation.results:
        lines.append(
            f"{r.id:26}{cell(r.kept_query, r.questions):>8}{cell(r.kept_plain, r.questions):>10}"
            f"{cell(r.aider, r.questions):>8}{r.topics:>8}{r.in_topics:>7}/{r.messages:<3}"
            f"{100 * r.largest_share:>8.0f}%{r.empty_lines:>7}{r.seconds:>7.0f}"
        )
    pooled = {k: evaluation.pooled(k) for k in ("kept_query", "kept_plain", "aider")}
    shares = [r.largest_share for r in evaluation.results]

    def pct(pair: tuple[int, int], shown: bool = True) -> str:
        return f"{100 * pair[0] / max(1, pair[1]):.1f}% ({pair[0]}/{pair[1]})" if shown else "–"

    def low(kept: str) -> str:
        r = evaluation.worst(kept)
        return f"{cell(getattr(r, kept), r.questions)} ({r.id})"

    lines += [
        "",
        f"pooled   query {pct(pooled['kept_query'])}; no query {pct(pooled['kept_plain'])}; "
        f"aider {pct(pooled['aider'], has_aider)}",
        f"worst    query {low('kept_query')}; no query {low('kept_plain')}"
        + (f"; aider {low('aider')}" if has_aider else ""),
        f"largest topic: median {100 * statistics.median(shares):.0f}% of the messages, "
        f"max {100 * max(shares):.0f}%; empty summary lines: "
        f"{sum(r.empty_lines for r in evaluation.results)} over all renders",
        "upstream (their judge, their histories): "
        + ", ".join(f"{name} {pct((k, n))}" for name, k, n in UPSTREAM),
    ]
    return lines
