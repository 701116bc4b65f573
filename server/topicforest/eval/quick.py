"""The dev set's compact table (`--quick`): what the lead's iteration loop reads."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from topicforest.eval.run import ConversationResult, Evaluation
from topicforest.eval.scores import pct, pooled_ari, pooled_purity, rate, worst


def largest_share(c: ConversationResult) -> float:
    """Messages in the largest topic at the end, as a share of the conversation's messages."""
    return max((t.messages for t in c.topics), default=0) / max(1, c.messages)


def input_ratio(c: ConversationResult, other: str) -> float | None:
    """Topic Forest's summarizer input tokens per token of `other`'s (`_per`)."""
    return _per(c.cost["forest"].input_tokens, c.cost[other].input_tokens)


def _per(ours: int, theirs: int) -> float | None:
    """`ours` per token of `theirs`; None if they summarized nothing (at a large budget flat's
    history may fit: no ratio to speak of)."""
    return ours / theirs if theirs else None


def _highest(ratios: Iterable[float | None]) -> float | None:
    return max((r for r in ratios if r is not None), default=None)


def dev_lines(evaluation: Evaluation) -> list[str]:
    """Per conversation, pooled and worst: facts kept with and without the question as the
    query (and by aider), purity, ARI, summarizer input against flat (and aider), and the
    largest topic's share of the messages."""
    convs = evaluation.conversations
    aider = "aider" in evaluation.systems
    kept = ["forest_query", "forest", *(["aider"] if aider else [])]
    others = ["flat", *(["aider"] if aider else [])]
    names = {"forest_query": "query", "forest": "no query", "aider": "aider"}
    head = [*(names[s] for s in kept), "purity", "ARI", *(f"in/{o}" for o in others), "largest"]

    def row(name: str, cells: list[str]) -> str:
        return f"{name:24}" + "".join(f"{x:>10}" for x in cells)

    def cells(
        kept_rates: list[float], purity: float, ari: float, ratios: list[float | None], share: float
    ) -> list[str]:
        return [
            *(f"{100 * r:.0f}%" for r in kept_rates),
            f"{purity:.2f}",
            f"{ari:.2f}",
            *("–" if r is None else f"{r:.2f}×" for r in ratios),
            f"{100 * share:.0f}%",
        ]

    lines = [
        f"dev set: {len(convs)} conversations, {evaluation.options.budget} tokens, "
        f"summarizer {evaluation.summarizer}; aider: {evaluation.aider_note}",
        "",
        row("conversation", head),
    ]
    for c in convs:
        ratios = [input_ratio(c, o) for o in others]
        rates = [rate(c.survival(s)) for s in kept]
        clustering = c.clustering
        lines.append(
            row(c.id, cells(rates, clustering.purity, clustering.ari, ratios, largest_share(c)))
        )
    forest_in = evaluation.cost("forest").input_tokens
    shares = [largest_share(c) for c in convs]
    pooled = [_per(forest_in, evaluation.cost(o).input_tokens) for o in others]
    rates = [rate(evaluation.survival(s)) for s in kept]
    purity, ari = pooled_purity(evaluation), pooled_ari(evaluation)
    lines.append(row("pooled", cells(rates, purity, ari, pooled, statistics.median(shares))))
    lows = [rate(worst(evaluation, s).survival(s)) for s in kept]
    highs = [_highest(input_ratio(c, o) for c in convs) for o in others]
    purity = min(c.clustering.purity for c in convs)
    worst_ari = min(c.clustering.ari for c in convs)
    lines.append(row("worst", cells(lows, purity, worst_ari, highs, max(shares))))
    lines += [
        "(pooled largest: the median conversation; worst in/…, largest: the highest)",
        "pooled: " + "; ".join(f"{names[s]} {pct(*evaluation.survival(s))}" for s in kept),
    ]
    if aider:
        gap = rate(evaluation.survival("forest")) - rate(evaluation.survival("aider"))
        lines[-1] += f"; no query − aider {100 * gap:+.1f} pp"
    return lines
