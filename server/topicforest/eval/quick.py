"""The dev set's compact table (`--quick`): what the lead's iteration loop reads."""

from __future__ import annotations

import statistics

from topicforest.eval.run import ConversationResult, Evaluation
from topicforest.eval.scores import pct, pooled_ari, pooled_purity, rate, worst


def largest_share(c: ConversationResult) -> float:
    """Messages in the largest topic at the end, as a share of the conversation's messages."""
    return max((t.messages for t in c.topics), default=0) / max(1, c.messages)


def input_ratio(c: ConversationResult, other: str) -> float:
    """Topic Forest's summarizer input tokens per token of `other`'s."""
    return c.cost["forest"].input_tokens / max(1, c.cost[other].input_tokens)


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

    def cells(kept_rates: list[float], purity: float, ari: float, ratios: list[float]) -> list[str]:
        return [
            *(f"{100 * r:.0f}%" for r in kept_rates),
            f"{purity:.2f}",
            f"{ari:.2f}",
            *(f"{r:.2f}×" for r in ratios[:-1]),
            f"{100 * ratios[-1]:.0f}%",
        ]

    lines = [
        f"dev set: {len(convs)} conversations, {evaluation.options.budget} tokens, "
        f"summarizer {evaluation.summarizer}; aider: {evaluation.aider_note}",
        "",
        row("conversation", head),
    ]
    for c in convs:
        ratios = [input_ratio(c, o) for o in others] + [largest_share(c)]
        rates = [rate(c.survival(s)) for s in kept]
        lines.append(row(c.id, cells(rates, c.clustering.purity, c.clustering.ari, ratios)))
    forest_in = evaluation.cost("forest").input_tokens
    shares = [largest_share(c) for c in convs]
    pooled = [forest_in / max(1, evaluation.cost(o).input_tokens) for o in others]
    rates = [rate(evaluation.survival(s)) for s in kept]
    purity, ari = pooled_purity(evaluation), pooled_ari(evaluation)
    lines.append(row("pooled", cells(rates, purity, ari, [*pooled, statistics.median(shares)])))
    lows = [rate(worst(evaluation, s).survival(s)) for s in kept]
    highs = [max(input_ratio(c, o) for c in convs) for o in others] + [max(shares)]
    purity = min(c.clustering.purity for c in convs)
    lines.append(row("worst", cells(lows, purity, min(c.clustering.ari for c in convs), highs)))
    lines += [
        "(pooled largest: the median conversation; worst in/…, largest: the highest)",
        "pooled: " + "; ".join(f"{names[s]} {pct(*evaluation.survival(s))}" for s in kept),
    ]
    if aider:
        gap = rate(evaluation.survival("forest")) - rate(evaluation.survival("aider"))
        lines[-1] += f"; no query − aider {100 * gap:+.1f} pp"
    return lines
