"""An expanded topic in a render: its originals verbatim, opening question first."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from topicforest.engine.embedding import extract_terms, norm_sq
from topicforest.engine.summarize.base import quote_message

if TYPE_CHECKING:
    from topicforest.engine.render import Mode, RenderSource


def expanded_block(
    window: RenderSource, root: int, qvec: Counter[str], space: int, head: str
) -> tuple[str, tuple[Mode, tuple[int, ...]]]:
    """An expanded topic's originals verbatim: its opening question first, then the most
    relevant (then newest) of the rest that fit; the header says how many of how many it sends."""
    members = window.forest.members(root)
    size = len(members)
    longest = f"{head} (expanded: {size} of {size} original messages, opening question first)"
    room = space - window.count(longest)
    opening = [min(members)] if members else []  # ids grow with time: its first message
    first = window.log.get_many(opening)
    if not first or first[0].tokens + 4 > room:
        opening = []
    else:
        room -= first[0].tokens + 4
    rest = [m for m in members if m not in opening]
    originals = opening + _best_members(window, qvec, rest, room)
    if len(originals) == size:
        said = f"{size} original messages"
    else:
        said = f"{len(originals)} of {size} original messages" + (
            ", opening question first" if opening else ""
        )
    return _join(f"{head} (expanded: {said})", originals, window), ("expanded", tuple(originals))


def _best_members(
    window: RenderSource, qvec: Counter[str], candidates: list[int], room: int
) -> list[int]:
    """Most relevant (then newest) candidate messages that fit in `room`, in original order."""
    if room <= 0 or not candidates:
        return []
    idf = window.embedder.idf
    qnorm = norm_sq(qvec, idf) if qvec else 0.0
    order = {m: i for i, m in enumerate(candidates)}
    pool = candidates if qnorm else candidates[-64:]  # without a query, recency decides
    messages = {m.id: m for m in window.log.get_many(pool)}  # one fetch: the log may be on disk

    def relevance(mid: int) -> tuple[float, int]:
        if not qnorm:
            return (0.0, order[mid])
        terms = window.pending_terms.get(mid)
        if terms is None:
            terms = extract_terms(messages[mid].content)
        vnorm = norm_sq(terms, idf)
        dot = sum(c * terms.get(t, 0) * idf.get(t, 0.0) ** 2 for t, c in qvec.items())
        return (dot / ((qnorm * vnorm) ** 0.5) if vnorm else 0.0, order[mid])

    chosen: list[int] = []
    used = 0
    for mid in sorted(pool, key=relevance, reverse=True):
        cost = messages[mid].tokens + 4  # quote prefixes and role label
        if used + cost > room:
            continue
        chosen.append(mid)
        used += cost
    return sorted(chosen, key=order.__getitem__)


def _join(header: str, ids: list[int], window: RenderSource) -> str:
    return "\n".join([header, *(quote_message(m) for m in window.log.get_many(ids))])
