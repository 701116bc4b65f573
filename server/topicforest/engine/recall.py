"""Provenance recall: find the original messages most relevant to a query.

Summaries lose detail; the originals never go away. An inverted index (term -> message ids, kept
as compact arrays) lets a render bring back the few graduated messages that answer the user's new
question, scored by the IDF of the query terms they contain, sharpened (BM25-like with binary term
frequency and a length penalty). Only ids and counts are held in memory; text stays in the message
log.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Mapping

MAX_QUERY_TERMS = 12  # the rarest query terms carry nearly all the signal; bounds render cost
MAX_POSTINGS = 1000  # and so does the cost of scoring: more common terms stop being added here
COMMON_SHARE = 0.25  # terms in more than this share of messages (and more than
COMMON_FLOOR = 16  # this many) are too common to say what a query is about
RECENCY_BONUS = 0.5  # the newest message scores this much more than an equal, older match
# Code shortens what a question spells out (`SHT40_CMD_MEAS_HIGH`, `cal`, `tempco`): an indexed
# term that begins a query word counts, at this share of its weight. (Dev set with a query
# 290 -> 294 of 334, worst unchanged; at 1.0: 289, the worst conversation 77% -> 71%.)
ABBREVIATION_SHARE = 0.5
MIN_ABBREVIATION = 3  # letters
MIN_ABBREVIATED = 5  # letters a query word needs to be shortened at all
# A query term weighs its IDF to this power: a rare name the question shares with a message
# (`removeOnComplete`, `kSetsPerPool`) says more than two common words do, more than IDF's log
# scale alone gives it. (With a query, dev 309 -> 310 of 334, held-out 41 -> 45 of 60, external
# at 1,024 tokens 117 -> 122 of 133, back-to-back 284 -> 288 of 320; at 1.25 / 1.75 / 2.0: dev
# 309 / 307 / 304, held-out 44 / 45 / 46.)
RARITY_POWER = 1.5


class RecallIndex:
    def __init__(self) -> None:
        self.postings: dict[str, array[int]] = {}
        self.root_lengths: dict[int, float] = {}  # message id -> sqrt(tokens), for length penalty
        self._total_root_length = 0.0
        self._newest = 1

    def add(self, message_id: int, terms: Iterable[str], tokens: int) -> None:
        for term in terms:
            ids = self.postings.get(term)
            if ids is None:
                ids = self.postings[term] = array("I")
            ids.append(message_id)
        self._newest = max(self._newest, message_id)
        root_length = math.sqrt(max(1, tokens))
        self.root_lengths[message_id] = root_length
        self._total_root_length += root_length

    def warm(self, budget_seconds: float) -> bool:
        """Build what a search would otherwise build first, for about `budget_seconds`; whether
        all is built (this index is built as messages graduate; a stored one is loaded)."""
        return True

    def forget(self, message_ids: set[int]) -> None:
        """Take deleted messages out of the index (rare: a whole pass over the postings)."""
        for term, ids in list(self.postings.items()):
            kept = array("I", (i for i in ids if i not in message_ids))
            if len(kept) == len(ids):
                continue
            if kept:
                self.postings[term] = kept
            else:
                del self.postings[term]
        for message_id in message_ids:
            self._total_root_length -= self.root_lengths.pop(message_id, 0.0)

    def prune(self, known: Mapping[str, int]) -> None:
        for term in [t for t in self.postings if t not in known]:
            del self.postings[term]

    def weights(self, query: Iterable[str], idf: Mapping[str, float]) -> dict[str, float]:
        """The query's terms by weight (their IDF to `RARITY_POWER`), with the indexed terms that
        abbreviate a query word (`meas` of "measurement") at `ABBREVIATION_SHARE` of theirs."""
        weights = {term: idf.get(term, 0.0) ** RARITY_POWER for term in query}
        for word in list(weights):
            if not word.isalpha() or len(word) < MIN_ABBREVIATED:
                continue
            for end in range(MIN_ABBREVIATION, len(word) - 1):
                short = word[:end]
                if short in self.postings and short not in weights:
                    weights[short] = ABBREVIATION_SHARE * idf.get(short, 0.0) ** RARITY_POWER
        return weights

    def search(self, weights: Mapping[str, float], limit: int = 50) -> list[tuple[int, float]]:
        """Best (message id, score) pairs for a query's term `weights`, best first."""
        n = len(self.root_lengths)
        if not n or not weights:
            return []
        common = max(COMMON_FLOOR, n * COMMON_SHARE)
        usable = [t for t in weights if t in self.postings and len(self.postings[t]) <= common]
        usable = sorted(usable, key=lambda t: len(self.postings[t]))[:MAX_QUERY_TERMS]
        scores: dict[int, float] = {}
        scanned = 0
        for term in usable:  # rarest first
            postings = self.postings[term]
            scanned += len(postings)
            if scanned > MAX_POSTINGS and scores:
                break
            weight = weights[term]
            # A rarest term that alone passes the bound (in a big memory every query term can
            # be in thousands of messages) is scored in the messages indexed last (the newest,
            # give or take other windows' graduations loaded late) only.
            for message_id in postings[-MAX_POSTINGS:]:
                scores[message_id] = scores.get(message_id, 0.0) + weight
        if not scores:
            return []
        scale = 0.5 * n / self._total_root_length  # penalty 0.5 + 0.5 * sqrt(len) / mean
        lengths = self.root_lengths
        # Among equally good matches the newer wins: a later message may supersede a value.
        bonus = RECENCY_BONUS / self._newest
        ranked = [  # (score, id) pairs compare without a key function: this runs every render
            (score * (1 + bonus * mid) / (0.5 + lengths[mid] * scale), mid)
            for mid, score in scores.items()
        ]
        return [(mid, score) for score, mid in heapq.nlargest(limit, ranked)]
