"""The engine on the labelled dev conversations in ../shared/eval (skipped where absent).

The replay is the evaluation's (`topicforest.eval.systems.run_topic_forest`: threads, upkeep after
every message, a pause after each reply), with the evaluation's independent summarizer (the lead
sentences of each message within a fifth of the input) run in process instead of behind the
loopback stub. The floors are regression guards a little under what the code measures (see
docs/benchmarks.md for the figures and `make eval` for the full report), checked pooled and for
the worst conversation, never tuned per file.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from topicforest.engine.summarize.base import SummaryRequest, SummaryResult
from topicforest.engine.tokens import estimate_tokens
from topicforest.eval.dataset import load_conversation
from topicforest.eval.metrics import adjusted_rand_index, contains_all, purity
from topicforest.eval.systems import ForestRun, run_flat, run_topic_forest
from topicforest.testing.stub_llm import lead_summary, summary_capacity

from ..conftest import requires_shared_eval, shared_conversations

pytestmark = requires_shared_eval


class LeadSummarizer:
    """The evaluation's primary stub summarizer, in process."""

    name = "lead"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        inputs = estimate_tokens(request.transcript())
        texts = [request.previous_summary or "", *(m.content for m in request.messages)]
        text = lead_summary(
            [t for t in texts if t], summary_capacity(inputs, request.target_tokens)
        )
        return SummaryResult(text or "I asked you about this.", self.name, inputs, len(text) // 3)


@dataclass
class Outcome:
    name: str
    facts: int
    with_query: int
    without_query: int
    flat: int
    labels: list[str]
    clusters: list[int]
    subjects: int
    topics: int
    forest_input: int
    flat_input: int


def _replay(path: Path) -> Outcome:
    conv = load_conversation(path)
    summarizer = LeadSummarizer()
    forest: ForestRun = asyncio.run(run_topic_forest(conv, summarizer, 2048, idle_after_reply=True))
    flat = asyncio.run(run_flat(conv, summarizer, 2048))
    labelled = [
        (c, m.topic) for c, m in zip(forest.clusters, conv.messages, strict=True) if m.topic
    ]
    return Outcome(
        name=conv.id,
        facts=len(conv.facts),
        with_query=sum(
            contains_all(forest.context_by_fact[f.id], f.must_contain) for f in conv.facts
        ),
        without_query=sum(
            contains_all(forest.context_no_query, f.must_contain) for f in conv.facts
        ),
        flat=sum(contains_all(flat.context, f.must_contain) for f in conv.facts),
        labels=[label for _, label in labelled],
        clusters=[cluster for cluster, _ in labelled],
        subjects=len({label for _, label in labelled}),
        topics=len(set(forest.clusters)),
        forest_input=forest.cost.input_tokens,
        flat_input=flat.cost.input_tokens,
    )


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return [_replay(path) for path in shared_conversations()]


def test_facts_survive_with_the_question_as_query(outcomes: list[Outcome]) -> None:
    pooled = sum(o.with_query for o in outcomes) / sum(o.facts for o in outcomes)
    worst = min(outcomes, key=lambda o: o.with_query / o.facts)
    print(f"\nquestion as query: {pooled:.0%} pooled, worst {worst.name} "
          f"{worst.with_query}/{worst.facts}")  # fmt: skip
    assert pooled >= 0.80
    assert worst.with_query / worst.facts >= 0.6


def test_facts_survive_without_a_query_far_more_than_with_flat_summaries(
    outcomes: list[Outcome],
) -> None:
    facts = sum(o.facts for o in outcomes)
    plain = sum(o.without_query for o in outcomes) / facts
    flat = sum(o.flat for o in outcomes) / facts
    print(f"\nno query: {plain:.0%} pooled against flat {flat:.0%}")
    assert plain >= flat + 0.15


def test_topics_are_pure_and_few(outcomes: list[Outcome]) -> None:
    labelled = sum(len(o.labels) for o in outcomes)
    pooled_purity = sum(purity(o.clusters, o.labels) * len(o.labels) for o in outcomes) / labelled
    pooled_ari = (
        sum(adjusted_rand_index(o.clusters, o.labels) * len(o.labels) for o in outcomes) / labelled
    )
    for o in outcomes:
        print(f"\n{o.name}: purity {purity(o.clusters, o.labels):.2f}, "
              f"{o.topics} topics for {o.subjects} subjects")  # fmt: skip
        assert o.topics <= 1.5 * o.subjects, o.name  # the cap is a ceiling, not a target
    print(f"\npooled purity {pooled_purity:.2f}, ARI {pooled_ari:.2f}")
    assert pooled_purity >= 0.75
    assert pooled_ari >= 0.6


def test_summaries_cost_less_than_flat_summarization(outcomes: list[Outcome]) -> None:
    ratio = sum(o.forest_input for o in outcomes) / sum(o.flat_input for o in outcomes)
    print(f"\nsummarizer input: {ratio:.2f} x flat")
    assert ratio <= 0.8
