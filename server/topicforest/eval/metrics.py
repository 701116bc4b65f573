"""Scoring: fact survival, superseded-value checks, purity, ARI and McNemar's exact test.

Written out here (no sklearn/scipy) so every number in the report can be traced to a few lines.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Sequence

from topicforest.eval.dataset import Conversation, Fact

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e-?\d+)?")
_TOKEN = re.compile(r"[\w.=-]+")
_UNIT = re.compile(r"(?<=\d)(?:px|ms|s|gb|mb|kb|gib|mib|%)$")


def contains_all(text: str, needles: Sequence[str]) -> bool:
    """The dataset's rule: every string present, case-insensitive substring match."""
    lowered = text.lower()
    return all(n.lower() in lowered for n in needles)


def old_values(conversation: Conversation, fact: Fact) -> list[str]:
    """Strings that state the superseded value of `fact` (empty if it was never superseded).

    The file may list them (`old_must_contain`); otherwise they are derived: for each numeric
    `must_contain` string, the tokens of the superseded message with the same shape (numbers
    collapsed, units dropped, e.g. `num_workers=8` for `num_workers=6`, `1.44.1` for `1.45.3`,
    `1024px` for `1280`) and of a comparable size (within 5x). The current message may repeat
    them as history ("raised from 50"), so they are not excluded there. A heuristic: the report
    lists the values it derived.
    """
    if fact.superseded_msg_index is None:
        return []
    if fact.old_must_contain:
        return list(fact.old_must_contain)
    old = conversation.messages[fact.superseded_msg_index].content
    found: list[str] = []
    for needle in fact.must_contain:
        if not _NUMBER.search(needle):
            continue
        for token in _TOKEN.findall(old):
            token = token.strip(".=-")
            if token in found or token.lower() == needle.lower():
                continue
            if _shape(token) == _shape(needle) and _comparable(token, needle):
                found.append(token)
    return found


def _shape(token: str) -> str:
    return _NUMBER.sub("#", _UNIT.sub("", token.lower()))


def _comparable(a: str, b: str) -> bool:
    """Same order of magnitude (within 5x) when both are plain numbers."""
    try:
        x = float(_UNIT.sub("", a.lower()).replace("_", "").replace(",", ""))
        y = float(_UNIT.sub("", b.lower()).replace("_", "").replace(",", ""))
    except ValueError:
        return True  # versions, key=value: the shape decides
    return x > 0 and y > 0 and max(x, y) / min(x, y) <= 5


def shows_only_old(text: str, conversation: Conversation, fact: Fact) -> bool:
    """The context lacks the current value but states a superseded one."""
    if contains_all(text, fact.must_contain):
        return False
    lowered = text.lower()
    return any(
        re.search(rf"(?<![\w.]){re.escape(v.lower())}(?![\w])", lowered)
        for v in old_values(conversation, fact)
    )


def purity(clusters: Sequence[Hashable], labels: Sequence[Hashable]) -> float:
    """Share of items whose cluster's majority label is their own label."""
    if len(clusters) != len(labels):
        raise ValueError("clusters and labels must have the same length")
    if not clusters:
        return 0.0
    by_cluster: dict[Hashable, Counter[Hashable]] = {}
    for cluster, label in zip(clusters, labels, strict=True):
        by_cluster.setdefault(cluster, Counter())[label] += 1
    return sum(c.most_common(1)[0][1] for c in by_cluster.values()) / len(clusters)


def adjusted_rand_index(clusters: Sequence[Hashable], labels: Sequence[Hashable]) -> float:
    """Hubert & Arabie's ARI from the contingency table (1 = identical, ~0 = chance)."""
    if len(clusters) != len(labels):
        raise ValueError("clusters and labels must have the same length")
    n = len(clusters)
    if n < 2:
        return 1.0
    table = Counter(zip(clusters, labels, strict=True))
    rows = Counter(clusters)
    cols = Counter(labels)
    index = sum(math.comb(v, 2) for v in table.values())
    row_sum = sum(math.comb(v, 2) for v in rows.values())
    col_sum = sum(math.comb(v, 2) for v in cols.values())
    expected = row_sum * col_sum / math.comb(n, 2)
    maximum = (row_sum + col_sum) / 2
    if maximum == expected:  # both all singletons or both one block: identical partitions
        return 1.0
    return (index - expected) / (maximum - expected)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int, float]:
    """Paired exact (binomial) McNemar test: (a-only wins, b-only wins, two-sided p-value)."""
    if len(a) != len(b):
        raise ValueError("paired outcomes must have the same length")
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    if n == 0:
        return only_a, only_b, 1.0
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n
    return only_a, only_b, min(1.0, 2 * tail)
