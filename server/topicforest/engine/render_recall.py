"""A question's recall in a render: the exchanges that answer it, quoted whole or as excerpts.

The recall index finds the graduated messages the question's rare words are in; a question and
its answer come back together (the question names what was asked, the answer holds the fact),
the best exchange with the largest share of the room, and the exchange that follows it next in
line (the fix often comes in the reply to the follow-up).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import TYPE_CHECKING

from topicforest.engine.answer_types import Values, states
from topicforest.engine.messages import Message
from topicforest.engine.passages import condense, excerpt, stem_weights
from topicforest.engine.summarize.base import quote, quote_message

if TYPE_CHECKING:
    from topicforest.engine.render import RenderSource

EXCHANGE_SHARE = 0.6  # of the recall room left, for the best exchange not yet shown
MIN_RELATIVE_SCORE = 0.25  # an exchange scoring less than this share of the best is noise
QUESTION_SHARE = 0.25  # of an exchange's room, for a question too long to recall whole
SHORT_QUESTION = 80  # tokens: a question this short is recalled whole with its answer
MIN_EXCERPT = 24
# An answer none of whose passages match the query (the question named the subject: "the 502s
# during rollouts"; the reply says `terminationGracePeriodSeconds: 45`) is quoted condensed, its
# prose and the code lines that state something, when it has this much room: in less, it was
# "Nice. [… more lines in the original]" 400 times over the held-out replays.
ANSWER_ROOM = 96
ANSWER_BONUS = 1.0  # an exchange stating a value of the kind the question asks for counts more
ANSWER_REACH = 5  # the places that bonus can lift an exchange into (the 5th gets 1.5% of the room)
# The exchange after the best one, in its topic, gets this share of its score: the best often
# holds the diagnosis, and the fact asked for comes in the reply to the follow-up ("fixed, but
# now …"). Not when the best exchange alone outgrows its share of the room.
CONTINUATION_SHARE = 0.4
# A question and its answer that both match say the question's words twice: counted in full,
# an exchange whose question repeated the subject outranked an answer that held the fact after a
# question in other words ("deployed. also: memory is climbing"). The lesser match counts at
# this share. (Against the sum, with a query: dev 306 -> 309 of 334, external 128 -> 130 of 133;
# with query terms weighed by `RARITY_POWER` too: dev 311 -> 310, held-out 44 -> 45 of 60, at
# 1,024 tokens external 119 -> 122, back-to-back 285 -> 288 of 320.)
SECOND_MATCH_SHARE = 0.7
CONTINUED_HITS = 3  # the best hits whose following messages are read for it


@dataclass(frozen=True)
class Recall:
    weights: dict[str, float]  # the question's terms by weight (`RecallIndex.weights`)
    hits: dict[int, float]  # message id -> score, best first
    values: Values = ()  # the kinds of value asked for (`answer_types`)
    named: Values = ()  # the version of a thing asked for by its name (`named_versions`)

    @property
    def best(self) -> int | None:
        return next(iter(self.hits), None)


@dataclass(frozen=True)
class Recalled:
    message_id: int
    line: str  # the quoted message as rendered
    tokens: int


def recall_hits(
    window: RenderSource, qvec: Counter[str], values: Values = (), named: Values = ()
) -> Recall:
    """The question's weights and the graduated messages that match it, best first (not in a
    dropped topic, nor in an expanded one: that shows its originals anyway)."""
    if not qvec:
        return Recall({}, {})
    forest = window.forest
    weights = window.recall.weights(qvec, window.embedder.idf)
    hits = {
        message_id: score
        for message_id, score in window.recall.search(weights)
        if message_id in forest
        and not forest.root(forest.find(message_id)).dropped
        and forest.find(message_id) not in window.expanded
    }
    return Recall(weights, hits, values, named)


def recall_exchanges(
    window: RenderSource,
    recall: Recall,
    room: int,
    also: list[int],
    read: dict[int, Message] | None = None,
) -> dict[int, list[Recalled]]:
    """The exchanges of `recall`'s hits most relevant to the query, by topic, within `room`
    tokens (the messages `also` are read with theirs, and every message read is put in `read`).

    A question and its answer are found together (the question names what was asked, the
    answer holds the fact) and ranked by the better match of the two and part of the other's.
    The best exchange gets the largest share of the room; a message longer than its share comes
    back as an excerpt: the passages that match, with their file."""
    forest, log = window.forest, window.log
    scores = recall.hits if room > 0 else {}
    # Each hit's exchange: a reply's question is the message before it, a question's reply the
    # one after (same thread, both graduated); one fetch for hits, neighbours and `also`.
    wanted = {n for m in scores for n in (m - 1, m, m + 1) if n in forest}
    wanted.update(n for m in islice(scores, CONTINUED_HITS) for n in (m + 2, m + 3) if n in forest)
    messages = {m.id: m for m in log.get_many(sorted(wanted.union(also)))} if wanted or also else {}
    if read is not None:
        read.update(messages)
    if not scores:
        return {}
    exchanges: dict[int, list[Message]] = {}
    totals: dict[int, float] = {}
    for message_id, score in scores.items():
        message = messages[message_id]
        first = message
        before = messages.get(message_id - 1)
        if message.role != "user" and before and before.thread_id == message.thread_id:
            first = before if before.role == "user" else message
        key = first.id
        if key not in exchanges:
            exchanges[key] = _exchange(first, messages)
        earlier = totals.get(key)
        totals[key] = score if earlier is None else exchange_score(earlier, score)
    if recall.values:
        # An exchange that states a value of the kind asked for counts more. Only those that
        # could reach the first places (where the room is) are read for it: a pattern search
        # over every hit's text cost a millisecond.
        best = sorted(totals.values(), reverse=True)
        least = best[min(ANSWER_REACH, len(best)) - 1] / (1 + ANSWER_BONUS)
        for key, pair in exchanges.items():
            if totals[key] >= least and any(_states(m.content, recall.values) for m in pair):
                totals[key] *= 1 + ANSWER_BONUS
    if recall.named:
        # "Which Django version does hearthware-shop use?": an exchange stating Django's version
        # answers it, and comes before every one that does not, though its words matched less
        # (only "version": "django" is in too many messages to count, the project's name in
        # one other message outscored it).
        top = max(totals.values())
        for key, pair in exchanges.items():
            if any(_states(m.content, recall.named) for m in pair):
                totals[key] += top
    _continue_best(window, messages, exchanges, totals, room)
    query_stems = stem_weights(recall.weights)
    chosen: dict[int, list[Recalled]] = {}
    used = 0
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    for rank, (key, total) in enumerate(ranked):
        left = room - used
        if left < MIN_EXCERPT or total < MIN_RELATIVE_SCORE * ranked[0][1]:
            break  # the rest of the room goes to the topics' summaries
        share = left if rank + 1 >= len(totals) else max(MIN_EXCERPT, int(left * EXCHANGE_SHARE))
        pieces = _exchange_lines(window, exchanges[key], query_stems, share, recall.values)
        for message, line, cost in pieces:
            chosen.setdefault(forest.find(message.id), []).append(Recalled(message.id, line, cost))
            used += cost
    return chosen


# The same hits come back turn after turn, and the kinds of value asked for are few: searching
# their texts again for a value was most of the bonus's cost.
@lru_cache(maxsize=1024)
def _states(text: str, values: Values) -> bool:
    return states(text, values)


def exchange_score(one: float, other: float) -> float:
    """An exchange's score from its two matching messages: the better one's and a share of the
    other's (`SECOND_MATCH_SHARE`)."""
    return max(one, other) + SECOND_MATCH_SHARE * min(one, other)


def _exchange(first: Message, messages: Mapping[int, Message]) -> list[Message]:
    """`first` and, if it is a question, the reply after it in its thread."""
    after = messages.get(first.id + 1)
    if (
        first.role == "user"
        and after is not None
        and after.thread_id == first.thread_id
        and after.role != "user"
    ):
        return [first, after]
    return [first]


def _continue_best(
    window: RenderSource,
    messages: dict[int, Message],
    exchanges: dict[int, list[Message]],
    totals: dict[int, float],
    room: int,
) -> None:
    """Give the exchange that follows the best one, in the same thread and topic, a share of
    the best one's score (`CONTINUATION_SHARE`), adding it to `exchanges` if it had no hit."""
    best = max(totals, key=totals.__getitem__)
    exchange = exchanges[best]
    if sum(window.count(quote_message(m)) + 1 for m in exchange) > room * EXCHANGE_SHARE:
        return  # the best exchange is excerpted: the room is better spent on it
    last = exchange[-1]
    question = messages.get(last.id + 1)
    if question is None or question.role != "user" or question.thread_id != last.thread_id:
        return
    if window.forest.find(question.id) != window.forest.find(best):
        return
    if question.id not in exchanges:
        exchanges[question.id] = _exchange(question, messages)
    totals[question.id] = totals.get(question.id, 0.0) + CONTINUATION_SHARE * totals[best]


def _exchange_lines(
    window: RenderSource,
    exchange: list[Message],
    query_stems: dict[str, float],
    room: int,
    values: Values,
) -> list[tuple[Message, str, int]]:
    """One exchange's messages quoted within `room`: whole when they fit, else each as its
    passages that answer the query (a short question stays whole: it says what was asked)."""
    count = window.count
    whole = [(m, quote_message(m)) for m in exchange]
    costs = [count(line) + 1 for _, line in whole]
    if sum(costs) <= room:
        return [(m, line, c) for (m, line), c in zip(whole, costs, strict=True)]
    out: list[tuple[Message, str, int]] = []
    left = room
    for position, (message, line) in enumerate(whole):
        later = len(whole) - position - 1
        if costs[position] <= min(left, SHORT_QUESTION) and message.role == "user" and later:
            out.append((message, line, costs[position]))
            left -= costs[position]
            continue
        # a long question gets a small part: the answer is where facts are stated
        own = left if not later else max(MIN_EXCERPT, int(left * QUESTION_SHARE))
        text = excerpt(message.content, query_stems, own - 8, count, values)
        if not text and position and own >= ANSWER_ROOM:  # the answer, in its own words
            text = condense(message.content, own - 8, count)
        if not text:
            continue
        quoted = quote(f"{message.role} (excerpt): {text}")
        cost = count(quoted) + 1
        if cost <= left:
            out.append((message, quoted, cost))
            left -= cost
    return out
