"""Run the evaluation: replay, score, and collect everything the report needs."""

from __future__ import annotations

import asyncio
import os
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from topicforest.engine.llm import load_litellm
from topicforest.engine.summarize.base import Summarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.eval.aider_baseline import AiderJob, AiderUnavailable, check_aider, run_aider
from topicforest.eval.dataset import Conversation
from topicforest.eval.metrics import (
    adjusted_rand_index,
    contains_all,
    old_values,
    purity,
    shows_only_old,
)
from topicforest.eval.split import SplitCheck, split_check
from topicforest.eval.systems import (
    BaselineRun,
    Cost,
    FactTrace,
    TopicSpend,
    run_flat,
    run_topic_forest,
    run_truncation,
)
from topicforest.eval.waiting import ChatStub, WaitTrace, wait_flat, wait_topic_forest
from topicforest.testing.stub_llm import STUB_API_KEY, StubLLM, ThreadedStubLLM

# Systems scored with the primary summarizer (the stub's independent lead summary, or --model);
# "aider" only when aider's venv can run (see topicforest.eval.aider_baseline).
SYSTEMS = ("forest_query", "forest", "flat", "aider", "truncation")
# The same systems again with the engine's own extractive scorer as the summarizer (stub only):
# the second column, to show how much of a result comes from sharing the render's scorer.
EXTRACTIVE_SYSTEMS = ("forest_query_x", "forest_x", "flat_x", "aider_x")
EXTRACTIVE_SUFFIX = " (engine's extractive summarizer)"
LABELS = {
    "forest_query": "Topic Forest (question as query)",
    "forest": "Topic Forest (no query)",
    "flat": "Flat recursive summary (reimplementation)",
    "aider": "aider ChatSummary (real)",
    "truncation": "Truncation",
}
LABELS.update({f"{s}_x": LABELS[s] + EXTRACTIVE_SUFFIX for s in SYSTEMS if s != "truncation"})
# One loopback stub serves both summarizers; the model name picks the stub's mode.
STUB_SUMMARY_MODEL = "openai/stub-summary"  # the stub's lead summary: independent of the engine
STUB_EXTRACTIVE_MODEL = "openai/stub-extractive"  # the engine's own ExtractiveSummarizer


@dataclass
class Options:
    budget: int = 2048
    model: str | None = None  # a real summarizer model (opt-in); None = the loopback stub
    api_base: str | None = None
    waiting: bool = True
    time_scale: float = 0.1  # 1 simulated second lasts this many real seconds
    summary_latency: tuple[float, float] = (1.0, 3.0)  # seconds per summarizer call (simulated)
    chat_latency: float = 2.0  # seconds per chat model call (simulated)
    think: float = 0.0  # seconds the user takes before the next message (simulated)
    # Quality replay: the user pauses longer than the memory's idle time after each reply (the
    # usual case), so every dirty topic is summarized then; False: messages come back to back.
    pause: bool = True
    # Other history budgets to replay Topic Forest and flat at (no-query and question survival),
    # so a reader can see the gap is not peculiar to the main budget; () = none.
    sweep: tuple[int, ...] = (1024, 1536, 3072, 4096)
    aider: bool = True  # run aider's real ChatSummary (stub only; needs .venv-aider)
    split: bool = True  # tune on half the conversations, report the other half (stub only)
    extractive: bool = True  # also score with the engine's extractive summarizer (stub only)
    alternative: bool = True  # also replay Topic Forest with the other pause behaviour


@dataclass
class FactOutcome:
    id: str
    position: str
    superseded: bool
    question: str
    must_contain: list[str]
    kept: dict[str, bool]  # system -> all must_contain present
    only_old: dict[str, bool]  # system -> shows a superseded value without the current one
    old_values: list[str]
    trace: FactTrace | None = None  # Topic Forest: where the fact's message ended up


@dataclass
class Clustering:
    labels: int  # distinct topic labels in the file
    labelled: int  # messages with a topic label
    topics: int
    purity: float  # chatter left out
    ari: float
    purity_with_chatter: float  # chatter as a label of its own
    ari_with_chatter: float
    composition: dict[int, dict[str, int]] = field(default_factory=dict)  # topic -> label counts


@dataclass
class Waiting:
    forest: list[float]  # seconds per turn, measured (scaled time)
    flat: list[float]
    forest_summary_calls: int
    flat_summary_calls: int
    forest_call_seconds: list[float]  # each summarizer call's own duration (measured)
    flat_call_seconds: list[float]
    # Topic Forest again with the summarizer latency unscaled (stub mode only): seconds per turn
    forest_unscaled: list[float] = field(default_factory=list)
    forest_unscaled_calls: int = 0


@dataclass
class Alternative:
    """Topic Forest replayed with the other pause behaviour, for the sensitivity table."""

    pause: bool
    kept_query: int
    kept_plain: int
    cost: Cost


@dataclass
class BudgetRun:
    """Facts kept at another history budget (sensitivity table)."""

    budget: int
    forest_query: int
    forest: int
    flat: int


@dataclass
class ConversationResult:
    id: str
    source: str
    messages: int
    facts: list[FactOutcome]
    clustering: Clustering
    cost: dict[str, Cost]
    topics: list[TopicSpend]
    max_render_tokens: int
    fallback_renders: int
    alternative: Alternative | None = None
    budgets: list[BudgetRun] = field(default_factory=list)
    waiting: Waiting | None = None

    def survival(self, system: str, position: str | None = None) -> tuple[int, int]:
        chosen = [f for f in self.facts if position is None or f.position == position]
        return sum(f.kept[system] for f in chosen), len(chosen)


@dataclass
class Evaluation:
    options: Options
    summarizer: str
    conversations: list[ConversationResult] = field(default_factory=list)
    systems: tuple[str, ...] = SYSTEMS  # every system scored, in report order
    aider_note: str = ""  # aider's version, or why its column is missing
    split: SplitCheck | None = None

    def facts(self) -> list[FactOutcome]:
        return [f for c in self.conversations for f in c.facts]

    def survival(self, system: str, position: str | None = None) -> tuple[int, int]:
        pairs = [c.survival(system, position) for c in self.conversations]
        return sum(k for k, _ in pairs), sum(n for _, n in pairs)

    def cost(self, system: str) -> Cost:
        total = Cost()
        for c in self.conversations:
            total.add(c.cost[system])
        return total


def score(conv: Conversation, contexts: dict[str, dict[str, str]]) -> list[FactOutcome]:
    """contexts: system -> fact id -> the text that system would send at the end."""
    outcomes = []
    for fact in conv.facts:
        texts = {system: by_fact[fact.id] for system, by_fact in contexts.items()}
        outcomes.append(
            FactOutcome(
                id=fact.id,
                position=conv.position(fact),
                superseded=fact.superseded_msg_index is not None,
                question=fact.question,
                must_contain=list(fact.must_contain),
                kept={s: contains_all(t, fact.must_contain) for s, t in texts.items()},
                only_old={s: shows_only_old(t, conv, fact) for s, t in texts.items()},
                old_values=old_values(conv, fact),
            )
        )
    return outcomes


def clustering(conv: Conversation, clusters: Sequence[int]) -> Clustering:
    labelled = [(c, m.topic) for c, m in zip(clusters, conv.messages, strict=True) if m.topic]
    everything = [(c, m.topic or "<chatter>") for c, m in zip(clusters, conv.messages, strict=True)]
    return Clustering(
        labels=len({t for _, t in labelled}),
        labelled=len(labelled),
        topics=len(set(clusters)),
        purity=purity([c for c, _ in labelled], [t for _, t in labelled]),
        ari=adjusted_rand_index([c for c, _ in labelled], [t for _, t in labelled]),
        purity_with_chatter=purity([c for c, _ in everything], [t for _, t in everything]),
        ari_with_chatter=adjusted_rand_index(
            [c for c, _ in everything], [t for _, t in everything]
        ),
        composition=_composition(everything),
    )


def _composition(pairs: Sequence[tuple[int, str]]) -> dict[int, dict[str, int]]:
    table: dict[int, Counter[str]] = {}
    for cluster, label in pairs:
        table.setdefault(cluster, Counter())[label] += 1
    return {c: dict(counts.most_common()) for c, counts in table.items()}


async def evaluate_conversation(
    conv: Conversation,
    summarizer: Summarizer,
    options: Options,
    extractive: Summarizer | None = None,
    aider: dict[str, BaselineRun] | None = None,
) -> ConversationResult:
    """Replay and score `conv`; `extractive`: also replay Topic Forest and flat with it;
    `aider`: aider's runs already made ("aider", "aider_x" -> its final context and cost)."""
    forest = await run_topic_forest(
        conv, summarizer, options.budget, idle_after_reply=options.pause
    )
    alternative = await alternative_run(conv, summarizer, options) if options.alternative else None
    flat = await run_flat(conv, summarizer, options.budget)
    truncation = run_truncation(conv, options.budget)
    budgets = [await budget_run(conv, summarizer, b, options.pause) for b in options.sweep]
    every = {f.id: "" for f in conv.facts}
    contexts = {
        "forest_query": forest.context_by_fact,
        "forest": dict.fromkeys(every, forest.context_no_query),
        "flat": dict.fromkeys(every, flat.context),
        "truncation": dict.fromkeys(every, truncation.context),
    }
    cost = {"forest": forest.cost, "flat": flat.cost, "truncation": truncation.cost}
    if extractive is not None:
        forest_x = await run_topic_forest(
            conv, extractive, options.budget, idle_after_reply=options.pause
        )
        flat_x = await run_flat(conv, extractive, options.budget)
        contexts["forest_query_x"] = forest_x.context_by_fact
        contexts["forest_x"] = dict.fromkeys(every, forest_x.context_no_query)
        contexts["flat_x"] = dict.fromkeys(every, flat_x.context)
        cost.update(forest_x=forest_x.cost, flat_x=flat_x.cost)
    for system, baseline in (aider or {}).items():
        contexts[system] = dict.fromkeys(every, baseline.context)
        cost[system] = baseline.cost
    facts = score(conv, contexts)
    for outcome in facts:
        outcome.trace = forest.traces[outcome.id]
    return ConversationResult(
        id=conv.id,
        source=conv.source,
        messages=len(conv.messages),
        facts=facts,
        clustering=clustering(conv, forest.clusters),
        cost=cost,
        topics=forest.topics,
        max_render_tokens=forest.max_render_tokens,
        fallback_renders=forest.fallback_renders,
        alternative=alternative,
        budgets=budgets,
    )


async def alternative_run(
    conv: Conversation, summarizer: Summarizer, options: Options
) -> Alternative:
    other = await run_topic_forest(
        conv, summarizer, options.budget, idle_after_reply=not options.pause
    )
    return Alternative(
        pause=not options.pause,
        kept_query=sum(
            contains_all(other.context_by_fact[f.id], f.must_contain) for f in conv.facts
        ),
        kept_plain=sum(contains_all(other.context_no_query, f.must_contain) for f in conv.facts),
        cost=other.cost,
    )


async def budget_run(
    conv: Conversation, summarizer: Summarizer, budget: int, pause: bool
) -> BudgetRun:
    forest = await run_topic_forest(conv, summarizer, budget, idle_after_reply=pause)
    flat = await run_flat(conv, summarizer, budget)
    return BudgetRun(
        budget,
        forest_query=sum(
            contains_all(forest.context_by_fact[f.id], f.must_contain) for f in conv.facts
        ),
        forest=sum(contains_all(forest.context_no_query, f.must_contain) for f in conv.facts),
        flat=sum(contains_all(flat.context, f.must_contain) for f in conv.facts),
    )


async def measure_waiting(
    conv: Conversation, options: Options, summarizer: Summarizer | None
) -> Waiting:
    """Real-time replay with latency; `summarizer` None = a latency stub (scaled time)."""
    scale = options.time_scale
    lo, hi = options.summary_latency
    load_litellm()  # warm, as a running server is: the first turn must not pay the import
    # The stubs run on their own threads so their work does not hold up the loop being measured.
    with (
        ThreadedStubLLM(latency=options.chat_latency * scale, seed=1) as chat_stub,
        ThreadedStubLLM(latency=(lo * scale, hi * scale), seed=2) as summary_stub,
    ):
        chat = ChatStub(chat_stub.base_url, chat_stub.script)
        chosen = summarizer or LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=summary_stub.base_url)
        think = options.think * scale
        forest: WaitTrace = await wait_topic_forest(conv, chat, chosen, options.budget, think)
        flat: WaitTrace = await wait_flat(conv, chat, chosen, options.budget, think)
        unscaled = WaitTrace()
        if summarizer is None:
            # Topic Forest once more with summaries taking 1–3 s of real time: a turn that waited
            # for one would take at least that long, far above any render time.
            with ThreadedStubLLM(latency=(lo, hi), seed=3) as slow_stub:
                slow = LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=slow_stub.base_url)
                unscaled = await wait_topic_forest(conv, chat, slow, options.budget, think)
    return Waiting(
        forest.turns,
        flat.turns,
        forest.summary_calls,
        flat.summary_calls,
        forest.summary_seconds,
        flat.summary_seconds,
        unscaled.turns,
        unscaled.summary_calls,
    )


async def evaluate(conversations: Sequence[Conversation], options: Options) -> Evaluation:
    if options.model is None:
        os.environ.setdefault("OPENAI_API_KEY", STUB_API_KEY)  # litellm wants one; stub ignores
    async with StubLLM() as stub:
        extractive: Summarizer | None = None
        if options.model:
            summarizer = LiteLLMSummarizer(options.model, api_base=options.api_base)
        else:
            summarizer = LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=stub.base_url)
            if options.extractive:
                extractive = LiteLLMSummarizer(STUB_EXTRACTIVE_MODEL, api_base=stub.base_url)
        aider, note = await aider_runs(conversations, options, stub.base_url)
        present = {s for runs in aider for s in runs}
        systems = tuple(
            s
            for s in SYSTEMS + (EXTRACTIVE_SYSTEMS if extractive else ())
            if not s.startswith("aider") or s in present
        )
        evaluation = Evaluation(options, summarizer.name, systems=systems, aider_note=note)
        for conv, aider_run in zip(conversations, aider, strict=True):
            result = await evaluate_conversation(conv, summarizer, options, extractive, aider_run)
            if options.waiting:
                real = summarizer if options.model else None
                result.waiting = await measure_waiting(conv, options, real)
            evaluation.conversations.append(result)
        if options.split and not options.model:  # real calls cost money: stub only
            evaluation.split = await split_check(
                conversations, summarizer, options.budget, options.pause
            )
    return evaluation


async def aider_runs(
    conversations: Sequence[Conversation], options: Options, base_url: str
) -> tuple[list[dict[str, BaselineRun]], str]:
    """aider's real ChatSummary on every conversation, with both stub summarizers, in one driver
    process; ([{} per conversation], why) when it cannot run."""
    nothing: list[dict[str, BaselineRun]] = [{} for _ in conversations]
    if options.model:
        return nothing, "aider's ChatSummary runs against the loopback stub only (not --model)"
    if not options.aider:
        return nothing, "aider's ChatSummary not run (--no-aider)"
    try:
        version = await check_aider()
        models = {"aider": STUB_SUMMARY_MODEL}
        if options.extractive:
            models["aider_x"] = STUB_EXTRACTIVE_MODEL
        jobs = [
            AiderJob(conv, model.split("/", 1)[1], options.budget)
            for conv in conversations
            for model in models.values()
        ]
        runs = iter(await run_aider(jobs, base_url, STUB_API_KEY))
    except AiderUnavailable as exc:
        return nothing, f"aider's ChatSummary column omitted: {exc}"
    by_conv = [{system: next(runs) for system in models} for _ in conversations]
    return by_conv, f"aider-chat {version}"


def run(conversations: Sequence[Conversation], options: Options) -> Evaluation:
    return asyncio.run(evaluate(conversations, options))


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0
