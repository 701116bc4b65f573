"""Background re-clustering: topics that are corrected after the fact.

Graduation places each exchange once, online, by what the forest looks like at that moment: early
choices are poor (few topics, a young vocabulary) and, with union-find alone, final. Upkeep runs
`Refiner.step` in slices of bounded time, off the chat path. Every so often (when enough exchanges
arrived since the last time) it clusters the most recent exchanges (at most `WINDOW_UNITS`) again
from scratch (older exchanges stay where they are; steps 1-5 are `clustering`'s):

1. **vectors**: each message's terms, sublinear and normalized, summed per exchange, so a pasted
   log or a 300-line file does not outvote the question it came with;
2. **average-linkage agglomeration**: merge the two most alike groups unless both are
   established (`MIN_COHESIVE` exchanges) and less alike than `COHESION_RATIO` × how alike each
   is within itself (a local rule: projects differ in how much vocabulary their subjects share,
   and a window may span subjects of very different kinds); groups with fewer than
   `FRAGMENT_SHARE` of the exchanges, and never more than `FRAGMENT_MOST` (`fragment_size`: a
   long window's small subjects stay topics), are fragments and join their nearest group; the
   topic cap is a ceiling;
3. **large groups halved**: a group holding more than `LARGE_SHARE` of the exchanges is split
   in two by what tells its parts apart (cosines centered on its own mean), again while a half
   is still that large: one issue discussed for hundreds of messages shares its vocabulary
   throughout, and a person draws its phases, not one catch-all;
4. **segmental k-means**: exchanges are reassigned to the nearest group, a thread's consecutive
   exchanges preferring to stay together (a Viterbi path with a switch penalty): people talk
   about one thing for a while, and a reply that quotes other code should not leave its subject.
   Cosines here are centered on the exchanges' mean direction (`clustering.centered`):
   uncentered, a big group's center is mostly the project's shared vocabulary and attracts
   every exchange, which turned a window's groups back into one catch-all;
5. **again, with project words weighed down**: steps 2-4 once more, each term's IDF scaled by
   how concentrated it was in the first pass's groups (`clustering.concentrated`), at most as
   many groups as the first pass made: a word every subject mentions (`postgres`, `pool`) has
   a high IDF in a window of a few hundred exchanges, yet tells no subject from another;
6. **reconcile** with the forest, keeping ids stable: a topic stays with the group of the
   exchange that names it, other groups become the topic they overlap most; a group with no such
   topic is split off the topic it overlaps most (new id: its oldest
   message's); a topic left with only its naming exchange follows it into its group's topic
   (the larger keeps its id). Flags follow the messages: a split keeps the topic's
   pinned/expanded state on both parts, a merge is pinned or expanded if either part was and
   dropped only if both were.
   Dropped topics are never touched; chatter ("thanks, that worked") follows the exchange it
   answers; the exchange whose first message names a topic stays unless its whole topic goes.

Work is bounded: the clustering, and applying its result, is a generator that yields often and
`step` stops at its budget, resuming on the next call; each move is checked against the forest as
it is then (units that moved, dropped topics) and never forced.
"""

from __future__ import annotations

import math
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topicforest.engine.clustering import (
    MIN_TOPIC_EXCHANGES,
    SCORE_EVERY,
    Vector,
    agglomerate,
    concentrated,
    provisional_home,
    segmental_kmeans,
    split_large,
    unit_vector,
)
from topicforest.engine.embedding import dot, norm_sq

if TYPE_CHECKING:
    from topicforest.engine.window import ContextWindow

WINDOW_UNITS = 400  # most recent exchanges that can still move (their terms stay in memory)
WEAK_TOKENS = 80  # shorter (and under half the median): joins groups, never starts one
RECLUSTER_GROWTH = 0.25  # re-cluster after this share of the window arrived anew (at least 4)
MIN_NEW_UNITS = 4
MOVES_EVERY = 8  # exchanges moved between checks (a round's result is applied in slices too)
PAIRS_EVERY = 256  # similarities computed between checks


@dataclass(slots=True)
class Unit:
    """One graduated exchange: its messages' ids, terms, entities and sizes."""

    ids: tuple[int, ...]
    thread_id: str
    message_terms: tuple[Counter[str], ...]
    files: tuple[str, ...]
    symbols: tuple[str, ...]
    tokens: tuple[int, ...]
    timestamps: tuple[float, ...]
    chatter: bool  # says too little to decide anything on its own
    terms: Counter[str] = field(default_factory=Counter)  # all messages' raw counts

    def __post_init__(self) -> None:
        if not self.terms:
            for counts in self.message_terms:
                self.terms.update(counts)


@dataclass
class Plan:
    """What a re-clustering decided: a group per unit (by first message id)."""

    groups: dict[int, int]  # unit key -> group
    topic_of: dict[int, int]  # unit key -> its topic when the plan was made


class Refiner:
    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.units: OrderedDict[int, Unit] = OrderedDict()  # first message id -> unit
        self._new_units = 0
        self._job: Iterator[set[int] | None] | None = None
        self._similarities: dict[tuple[int, int], float] = {}
        self._similarity_epoch = -1
        self.rounds = 0  # re-clusterings completed (for tests and figures)
        self.settled_before = 0  # exchanges that started before this id took part in a round
        self._round_start = 0  # the same bound for the round in progress
        self.used = False  # whether upkeep re-clusters this window at all

    # -- bookkeeping -------------------------------------------------------------------------
    def add(self, unit: Unit) -> None:
        self.units[unit.ids[0]] = unit
        while len(self.units) > WINDOW_UNITS:
            self.units.popitem(last=False)
        self._new_units += 1

    def settled(self, message_id: int) -> bool:
        """Whether the message's exchange has been through a re-clustering round or is too old
        to move (until then it may still change topic, so summarizing it waits); everything is
        settled for a window whose upkeep never re-clusters."""
        return (
            not self.used
            or message_id < self.settled_before
            or (bool(self.units) and message_id < next(iter(self.units)))
        )

    def forget(self, message_ids: set[int]) -> None:
        """Deleted messages leave the exchanges that re-clustering may still move; a round in
        progress starts again (its plan named them)."""
        for first, unit in list(self.units.items()):
            if not message_ids.isdisjoint(unit.ids):
                del self.units[first]
        self._job = None
        self._similarities.clear()

    def clear(self) -> None:
        self.units.clear()
        self._new_units = 0
        self._job = None

    @property
    def pending(self) -> bool:
        return self._job is not None or self._new_units >= max(
            MIN_NEW_UNITS, int(RECLUSTER_GROWTH * len(self.units))
        )

    # -- one slice -----------------------------------------------------------------------------
    def step(
        self, window: ContextWindow, budget_seconds: float = 0.05, *, settle: bool = False
    ) -> set[int]:
        """Work on `window` for about `budget_seconds` at most; returns the topics changed.
        `settle` (the user is away): any exchange not yet seen by a round is reason enough.

        The window is passed in, not kept: a store reload replaces its state."""
        self.used = True
        if not (self.pending or (settle and self._new_units)):
            return set()
        if self._job is None:
            self._new_units = 0
            self._round_start = next(reversed(self.units), 0) + 1
            self._job = self._cluster(window)
        deadline = self.clock() + budget_seconds
        changed: set[int] = set()
        for piece in self._job:  # None: a check point; a set: the topics a round changed
            changed |= piece or set()
            if self.clock() > deadline:
                return changed
        self._job = None  # the round is over: its exchanges are settled
        self.rounds += 1
        self.settled_before = self._round_start
        return changed

    # -- the clustering --------------------------------------------------------------------------
    def _cluster(self, window: ContextWindow) -> Iterator[set[int] | None]:
        forest = window.forest
        idf = window.embedder.idf
        if window.embedder.epoch != self._similarity_epoch:
            self._similarities.clear()
            self._similarity_epoch = window.embedder.epoch
        # The units that can move, in order, with their topics now (dropped topics stay as
        # they are, and so do their units).
        units: list[Unit] = []
        topic_of: dict[int, int] = {}
        for key, unit in self.units.items():
            if key in forest:
                root = forest.find(key)
                if not forest.root(root).dropped:
                    units.append(unit)
                    topic_of[key] = root
        if len(units) < MIN_NEW_UNITS:
            return
        vectors: dict[int, Vector] = {}
        for n, unit in enumerate(units):
            if not unit.chatter:
                vectors[unit.ids[0]] = unit_vector(unit.message_terms, idf)
            if n % SCORE_EVERY == 0:  # a long exchange's vector takes a millisecond
                yield None
        # Short exchanges do not seed groups (they would make fragments) but are placed below.
        # "Short" is relative: in a chat of short turns every exchange seeds.
        sizes = sorted(sum(u.tokens) for u in units)
        short = min(WEAK_TOKENS, sizes[len(sizes) // 2] / 2)
        weak = {u.ids[0] for u in units if sum(u.tokens) < short}
        items = [k for k in vectors if k not in weak]
        if len(items) < 2:
            return
        sequences: dict[str, list[int]] = {}  # per thread, in order
        for unit in units:
            if unit.ids[0] in vectors:
                sequences.setdefault(unit.thread_id, []).append(unit.ids[0])
        exchanges = Exchanges(items, vectors, list(sequences.values()), topic_of)
        assignment = yield from regroup(
            exchanges, idf, window.config.max_topics, self._similarities
        )
        plan = Plan(groups={}, topic_of=topic_of)
        previous: dict[str, int] = {}  # thread -> group of its last exchange
        for unit in units:
            key = unit.ids[0]
            if key in assignment:
                plan.groups[key] = assignment[key]
            elif unit.thread_id in previous:  # chatter stays with what it answers
                plan.groups[key] = previous[unit.thread_id]
            else:
                continue
            previous[unit.thread_id] = plan.groups[key]
        yield from apply_plan(window, self.units, plan)


@dataclass(frozen=True)
class Exchanges:
    """What a round clusters: the exchanges that seed groups (`items`), every exchange's
    vector, each thread's exchanges in order, and the topic each is in now."""

    items: list[int]
    vectors: Mapping[int, Vector]
    threads: list[list[int]]
    topic_of: Mapping[int, int]


def regroup(
    exchanges: Exchanges,
    idf: Mapping[str, float],
    max_groups: int,
    cache: dict[tuple[int, int], float],
) -> Generator[None, None, dict[int, int]]:
    """A group per exchange: `group` once with `idf`, then again with each term weighed by how
    much of it one group holds. A word the first pass found in many groups (`pool`, `postgres`)
    is the project's, not a subject's, and should not glue exchanges of different subjects
    together (purity: dev worst 0.79 -> 0.80, held-out 0.81 -> 0.86). The second pass never
    makes more groups than the first: uncapped (measured with the plain factor), sharper
    weights split subjects (up to 1.8 topics per subject; external no-query facts 71 -> 65
    of 133)."""
    first = yield from group(exchanges, idf, max_groups, cache)
    weights = yield from concentrated(exchanges.vectors, first, idf)
    fewer = min(max_groups, len(set(first.values())))
    return (yield from group(exchanges, weights, fewer, {}))


def group(
    exchanges: Exchanges,
    idf: Mapping[str, float],
    max_groups: int,
    cache: dict[tuple[int, int], float],
) -> Generator[None, None, dict[int, int]]:
    """One clustering of `exchanges` with term weights `idf` (pair similarities kept in
    `cache`), at most `max_groups` groups: a group per exchange (every one of the threads is
    placed)."""
    items, vectors = exchanges.items, exchanges.vectors
    norms: dict[int, float] = {}
    for n, (key, vector) in enumerate(vectors.items()):  # a pasted log has thousands of terms
        norms[key] = math.sqrt(norm_sq(vector, idf))
        if n % SCORE_EVERY == SCORE_EVERY - 1:
            yield None
    similarity: dict[tuple[int, int], float] = {}
    work = 0
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            both = (a, b)
            cached = cache.get(both)
            if cached is None:
                denominator = norms[a] * norms[b]
                cached = dot(vectors[a], vectors[b], idf) / denominator if denominator else 0.0
                cache[both] = cached
            similarity[both] = cached
            work += 1
            if work % PAIRS_EVERY == 0:  # a fresh similarity costs tens of microseconds
                yield None
    groups = yield from agglomerate(items, similarity, max_groups)
    groups = yield from split_large(groups, similarity, max_groups)
    assignment = {item: g for g, members in groups.items() for item in members}
    home = provisional_home(assignment, exchanges.topic_of)
    mean: Vector = {}
    for n, key in enumerate(items):
        for term, value in vectors[key].items():
            mean[term] = mean.get(term, 0.0) + value / (norms[key] or 1.0) / len(items)
        if n % SCORE_EVERY == SCORE_EVERY - 1:
            yield None
    yield from segmental_kmeans(exchanges.threads, vectors, assignment, idf, home, mean)
    return assignment


EMPTY = Unit((), "", (), (), (), (), (), chatter=True)


def apply_plan(
    window: ContextWindow, units: Mapping[int, Unit], plan: Plan
) -> Iterator[set[int] | None]:
    """Reconcile the forest with `plan`, keeping topic ids stable (see the module's notes)."""
    forest = window.forest
    changed: set[int] = set()

    def current(key: int) -> int | None:
        if key not in forest:
            return None
        root = forest.find(key)
        return None if forest.root(root).dropped else root

    # Which topic each group becomes: the live topic holding most of its messages.
    overlap: dict[int, Counter[int]] = {}
    for key, group in plan.groups.items():
        root = current(key)
        unit = units.get(key)
        if root is not None and unit is not None:
            overlap.setdefault(group, Counter())[root] += len(unit.ids)
    target: dict[int, int] = {}
    taken: set[int] = set()
    # A topic stays with the group of the exchange that names it (its oldest), so its id and
    # that exchange keep the same subject; other groups go to the topic they overlap most.
    for key, group in plan.groups.items():
        root = current(key)
        if root is not None and root in units.get(key, EMPTY).ids and group not in target:
            target[group] = root
            taken.add(root)
    ranked = sorted(
        ((count, group, root) for group, c in overlap.items() for root, count in c.items()),
        reverse=True,
    )
    for _, group, root in ranked:
        if group not in target and root not in taken:
            target[group] = root
            taken.add(root)
    # Groups without a topic of their own are split off the topic holding most of them.
    for group in {g for g in plan.groups.values() if g not in target}:
        keys = [k for k, g in plan.groups.items() if g == group and current(k) is not None]
        by_topic: dict[int, list[Unit]] = {}
        for key in keys:
            root = current(key)
            unit = units.get(key)
            if root is not None and unit is not None and root not in unit.ids:
                by_topic.setdefault(root, []).append(unit)
        if not by_topic or len(forest.live_roots()) >= window.config.max_topics:
            continue
        source = max(by_topic, key=lambda r: sum(len(u.ids) for u in by_topic[r]))
        part = by_topic[source]
        if sum(not u.chatter for u in part) < MIN_TOPIC_EXCHANGES:
            continue
        new_root = window.split_topic(source, part)
        target[group] = new_root
        changed |= {source, new_root}
    # Every other exchange moves to its group's topic; a topic's naming exchange last, and only
    # with the rest of its topic (then the topic merges into where it went).
    naming: list[tuple[Unit, int, int]] = []
    moves = 0
    for key, group in plan.groups.items():
        goal = target.get(group)
        unit = units.get(key)
        root = current(key)
        if goal is None or unit is None or root is None or root == goal:
            continue
        if not forest.is_root(goal) or forest.root(goal).dropped:
            continue
        if root in unit.ids:
            naming.append((unit, root, goal))
        elif window.move_unit(unit, root, goal):
            changed |= {root, goal}
            moves += 1
            if moves % MOVES_EVERY == 0:  # each move is checked against the forest as it is
                yield None
    for unit, root, goal in naming:
        if forest.is_root(root) and forest.size(root) == len(unit.ids) and forest.is_root(goal):
            survivor = window.merge_topics(root, goal)
            changed |= {root, goal, survivor}
    yield {r for r in changed if forest.is_root(r)}
