"""The figures every part of the report shares: shares kept, pooled clustering, worst cases."""

from __future__ import annotations

from collections.abc import Callable

from topicforest.eval.run import SYSTEMS, ConversationResult, Evaluation

POSITIONS = ("early", "middle", "late")
Add = Callable[[str], None]  # appends one markdown line
Figure = Callable[[str, str], str]  # (figure key, caption) -> its markdown, "" when not drawn


def primary(evaluation: Evaluation) -> list[str]:
    """The systems scored with the primary summarizer, in report order."""
    return [s for s in SYSTEMS if s in evaluation.systems]


def pct(kept: int, total: int) -> str:
    return f"{100 * kept / total:.0f}% ({kept}/{total})" if total else "–"


def rate(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def pooled_purity(evaluation: Evaluation) -> float:
    """Purity over all labelled messages of all conversations (each conversation its own topics)."""
    total = sum(c.clustering.purity * _labelled(c) for c in evaluation.conversations)
    return total / max(1, sum(_labelled(c) for c in evaluation.conversations))


def pooled_ari(evaluation: Evaluation) -> float:
    """Per-conversation ARI weighted by labelled messages (ARI over one concatenation of all
    conversations would count every cross-conversation pair as agreement and flatter it)."""
    total = sum(c.clustering.ari * _labelled(c) for c in evaluation.conversations)
    return total / max(1, sum(_labelled(c) for c in evaluation.conversations))


def _labelled(c: ConversationResult) -> int:
    return c.clustering.labelled


def topic_ratio(c: ConversationResult) -> float:
    """Topics at the end (chatter-only ones included) per labelled subject."""
    return c.clustering.topics / max(1, c.clustering.labels)


def worst(evaluation: Evaluation, system: str) -> ConversationResult:
    """The conversation where `system` keeps the smallest share of facts (first on ties)."""
    return min(evaluation.conversations, key=lambda c: rate(c.survival(system)))


def wait_scale(evaluation: Evaluation) -> float:
    """Multiply measured seconds by this to get simulated seconds (1 with a real model)."""
    return 1.0 if evaluation.options.model else 1.0 / evaluation.options.time_scale
