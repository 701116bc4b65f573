"""Background re-clustering: topics that are corrected after the fact.

Graduation places each exchange once, online, by what the forest looks like at that moment: early
choices are poor (few topics, a young vocabulary) and, with union-find alone, final. Upkeep runs
`Refiner.step` in slices of bounded time, off the chat path. Every so often (when enough exchanges
arrived since the last time) it clusters the most recent exchanges (at most `WINDOW_UNITS`) again
from scratch; older members of each topic take part as one fixed item per topic:

1. **vectors**: each message's terms, sublinear and normalized, summed per exchange, so a pasted
   log or a 300-line file does not outvote the question it came with;
2. **average-linkage agglomeration**: merge the two most alike groups while they are more alike
   than `STOP_RATIO` × the mean similarity of any two exchanges of this conversation (a relative
   rule: projects differ in how much vocabulary their subjects share); the topic cap is a
   ceiling; groups of fewer than `MIN_TOPIC_EXCHANGES` exchanges are fragments and join their
   nearest group;
3. **segmental k-means**: exchanges are reassigned to the nearest group, a thread's consecutive
   exchanges preferring to stay together (a Viterbi path with a switch penalty): people talk
   about one thing for a while, and a reply that quotes other code should not leave its subject;
4. **reconcile** with the forest, keeping ids stable: each group becomes the topic it overlaps
   most; a group with no such topic is split off the topic it overlaps most (new id: its oldest
   message's); a topic whose old members joined another group is merged into it (the larger
   keeps its id). Flags follow the messages: a split keeps the topic's pinned/expanded state on
   both parts, a merge is pinned or expanded if either part was and dropped only if both were.
   Dropped topics are never touched; chatter ("thanks, that worked") follows the exchange it
   answers; the exchange whose first message names a topic stays unless its whole topic goes.

Work is bounded: the clustering is a generator that yields often and `step` stops at its budget,
resuming on the next call; a result whose inputs changed meanwhile is checked again as it is
applied (units that moved, dropped topics) and never forced.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topicforest.engine.embedding import dot, norm_sq

if TYPE_CHECKING:
    from topicforest.engine.window import ContextWindow

WINDOW_UNITS = 400  # most recent exchanges that can still move (their terms stay in memory)
STOP_RATIO = 1.3  # keep merging while groups are this much more alike than two random exchanges
MIN_TOPIC_EXCHANGES = 2  # fewer than this: a fragment, not a topic
FRAGMENT_SHARE = 0.05  # and a group with less than this share of the exchanges
STAY_BONUS = 0.05  # cosine an exchange's current topic is preferred by
WEAK_TOKENS = 80  # an exchange shorter than this joins groups but does not start one
SWITCH_PENALTY = 0.3  # cosine a thread pays to change topic between consecutive exchanges
KMEANS_ROUNDS = 6
RECLUSTER_GROWTH = 0.25  # re-cluster after this share of the window arrived anew (at least 4)
MIN_NEW_UNITS = 4
YIELD_EVERY = 64  # pieces of work between checks of the time budget

Vector = dict[str, float]


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
    """What a re-clustering decided: a group per unit (by first message id) and per topic's
    older members (topics not in `frozen_group` had none)."""

    groups: dict[int, int]  # unit key -> group
    frozen_group: dict[int, int]  # topic id -> group of its members outside the window
    topic_of: dict[int, int]  # unit key -> its topic when the plan was made


class Refiner:
    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.units: OrderedDict[int, Unit] = OrderedDict()  # first message id -> unit
        self._new_units = 0
        self._job: Iterator[Plan | None] | None = None
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
        for plan in self._job:
            if plan is not None:
                self._job = None
                self.rounds += 1
                self.settled_before = self._round_start
                return apply_plan(window, self.units, plan)
            if self.clock() > deadline:
                return set()
        self._job = None
        return set()

    # -- the clustering --------------------------------------------------------------------------
    def _cluster(self, window: ContextWindow) -> Iterator[Plan | None]:
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
            yield Plan({}, {}, topic_of)
            return
        vectors: dict[int, Vector] = {}
        for n, unit in enumerate(units):
            if not unit.chatter:
                vectors[unit.ids[0]] = unit_vector(unit.message_terms, idf)
            if n % YIELD_EVERY == 0:
                yield None
        # Each topic's members outside the window take part as one fixed item.
        inside: dict[int, Counter[str]] = {}
        counted: Counter[int] = Counter()
        for unit in units:
            inside.setdefault(topic_of[unit.ids[0]], Counter()).update(unit.terms)
            counted[topic_of[unit.ids[0]]] += len(unit.ids)
        frozen: dict[int, Vector] = {}  # keyed by -topic id - 1 (never a message id)
        weight: dict[int, float] = {}
        for root in forest.live_roots():
            outside = forest.size(root) - counted[root]
            if outside <= 0:
                continue
            rest = Counter(window.index[root].terms)
            rest.subtract(inside.get(root, Counter()))
            vector = unit_vector([+rest], idf)
            if vector:
                frozen[-root - 1] = vector
                weight[-root - 1] = max(1.0, outside / 2)  # about its number of exchanges
        # Short exchanges do not seed groups (they would make fragments) but are placed below.
        weak = {u.ids[0] for u in units if sum(u.tokens) < WEAK_TOKENS}
        items = [*(k for k in vectors if k not in weak), *frozen]
        if len(items) < 2:
            yield Plan({}, {}, topic_of)
            return
        every = {**vectors, **frozen}
        norms = {key: math.sqrt(norm_sq(v, idf)) for key, v in every.items()}
        similarity: dict[tuple[int, int], float] = {}
        work = 0
        for i, a in enumerate(items):
            for b in items[i + 1 :]:
                both = (a, b)
                cached = self._similarities.get(both) if a >= 0 and b >= 0 else None
                if cached is None:
                    denominator = norms[a] * norms[b]
                    cached = dot(every[a], every[b], idf) / denominator if denominator else 0.0
                    if a >= 0 and b >= 0:
                        self._similarities[both] = cached
                similarity[both] = cached
                work += 1
                if work % (YIELD_EVERY * 16) == 0:
                    yield None
        groups = yield from _agglomerate(items, similarity, weight, window.config.max_topics)
        assignment = {item: g for g, members in groups.items() for item in members}
        home = _provisional_home(assignment, topic_of, frozen)
        yield from _segmental_kmeans(units, vectors, frozen, weight, assignment, idf, home)
        plan = Plan(
            groups={},
            frozen_group={-item - 1: assignment[item] for item in frozen},
            topic_of=topic_of,
        )
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
        yield plan


def unit_vector(message_terms: Sequence[Mapping[str, float]], idf: Mapping[str, float]) -> Vector:
    """Sum of each message's sublinear, normalized term weights (as raw counts for `dot`)."""
    total: Vector = {}
    for counts in message_terms:
        sub = {t: 1.0 + math.log(c) for t, c in counts.items() if c > 0 and t in idf}
        length = math.sqrt(norm_sq(sub, idf))
        if length <= 0:
            continue
        for term, value in sub.items():
            total[term] = total.get(term, 0.0) + value / length
    return total


def _agglomerate(
    items: list[int],
    similarity: dict[tuple[int, int], float],
    weight: Mapping[int, float],
    max_groups: int,
) -> Generator[None, None, dict[int, list[int]]]:
    """Average-linkage clustering with the relative stop rule; returns groups by their first
    item (a generator: `yield from` gives the result)."""

    def pair(a: int, b: int) -> float:
        return similarity[(a, b)] if (a, b) in similarity else similarity[(b, a)]

    mean = sum(similarity.values()) / max(1, len(similarity))
    size = {item: weight.get(item, 1.0) for item in items}
    members = {item: [item] for item in items}
    linkage: dict[tuple[int, int], float] = {}
    version = dict.fromkeys(items, 0)  # bumps when a group grows: older heap entries are stale
    heap: list[tuple[float, int, int, int, int]] = []
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            s = pair(a, b)
            linkage[(a, b)] = s
            heap.append((-s, a, b, 0, 0))
    heapq.heapify(heap)

    def link(a: int, b: int) -> float:
        return linkage[(a, b)] if (a, b) in linkage else linkage[(b, a)]

    smallest = max(MIN_TOPIC_EXCHANGES, FRAGMENT_SHARE * sum(size.values()))

    def fragment(group: int) -> bool:
        return size[group] < smallest

    work = 0
    while len(members) > 1:
        while heap and not _current(heap[0], members, version):
            heapq.heappop(heap)
        if not heap:
            break
        best, a, b, _, _ = heap[0]
        if -best < STOP_RATIO * mean and len(members) <= max_groups:
            small = [g for g in members if fragment(g)]
            if not small:
                break
            a = min(small, key=lambda g: size[g])
            b = max((g for g in members if g != a), key=lambda g: link(a, g))
        else:
            heapq.heappop(heap)
        # merge b into a
        for other in members:
            if other in (a, b):
                continue
            merged = (size[a] * link(a, other) + size[b] * link(b, other)) / (size[a] + size[b])
            linkage[(a, other)] = merged
            linkage.pop((other, a), None)
        members[a] += members.pop(b)
        size[a] += size.pop(b)
        version[a] += 1
        for other in members:
            if other != a:
                heapq.heappush(heap, (-link(a, other), a, other, version[a], version[other]))
        work += len(members)
        if work > YIELD_EVERY * 16:
            work = 0
            yield None
    return {group: list(ms) for group, ms in members.items()}


def _current(
    entry: tuple[float, int, int, int, int],
    members: Mapping[int, object],
    version: Mapping[int, int],
) -> bool:
    _, a, b, va, vb = entry
    return a in members and b in members and version[a] == va and version[b] == vb


def _provisional_home(
    assignment: Mapping[int, int], topic_of: Mapping[int, int], frozen: Mapping[int, Vector]
) -> dict[int, int]:
    """Per unit, the group that stands for its current topic (the group holding most of that
    topic's exchanges), so staying there can be preferred."""
    votes: dict[int, Counter[int]] = {}
    for item, group in assignment.items():
        topic = topic_of.get(item) if item >= 0 else -item - 1
        if topic is not None:
            votes.setdefault(topic, Counter())[group] += 1 if item >= 0 or item not in frozen else 3
    topic_group = {topic: c.most_common(1)[0][0] for topic, c in votes.items()}
    return {item: topic_group[topic_of[item]] for item in topic_of if topic_of[item] in topic_group}


def _segmental_kmeans(
    units: list[Unit],
    vectors: Mapping[int, Vector],
    frozen: Mapping[int, Vector],
    weight: Mapping[int, float],
    assignment: dict[int, int],
    idf: Mapping[str, float],
    home: Mapping[int, int],
) -> Iterator[None]:
    """Reassign exchanges to the nearest group, per thread along a Viterbi path that pays
    `SWITCH_PENALTY` for each change of group, and `STAY_BONUS` more for the group standing
    for an exchange's current topic (the tree should not jump for a marginal gain); frozen
    items stay where they are."""
    by_thread: dict[str, list[int]] = {}
    for unit in units:
        if unit.ids[0] in vectors:
            by_thread.setdefault(unit.thread_id, []).append(unit.ids[0])
    for _ in range(KMEANS_ROUNDS):
        centers: dict[int, Vector] = {}
        for item, group in assignment.items():
            vector = vectors.get(item) or frozen[item]
            scale = weight.get(item, 1.0) / math.sqrt(norm_sq(vector, idf) or 1.0)
            center = centers.setdefault(group, {})
            for term, value in vector.items():
                center[term] = center.get(term, 0.0) + value * scale
        groups = list(centers)
        center_norms = [math.sqrt(norm_sq(centers[g], idf)) or 1.0 for g in groups]
        changed = False
        for sequence in by_thread.values():
            scores = []
            for item in sequence:
                vector = vectors[item]
                length = math.sqrt(norm_sq(vector, idf)) or 1.0
                stay = home.get(item)
                scores.append(
                    [
                        STAY_BONUS * (g == stay) + dot(vector, centers[g], idf) / (length * n)
                        for g, n in zip(groups, center_norms, strict=True)
                    ]
                )
            path = _viterbi(scores, SWITCH_PENALTY)
            for item, choice in zip(sequence, path, strict=True):
                if assignment.get(item) != groups[choice]:
                    assignment[item] = groups[choice]
                    changed = True
            yield None
        if not changed:
            return


def _viterbi(scores: list[list[float]], penalty: float) -> list[int]:
    """The path through the score rows with the highest total, a change costing `penalty`."""
    if not scores:
        return []
    width = len(scores[0])
    best = list(scores[0])
    back: list[list[int]] = []
    for row in scores[1:]:
        leader = max(range(width), key=best.__getitem__)
        step: list[int] = []
        new = []
        for k in range(width):
            stay, switch = best[k], best[leader] - penalty
            if stay >= switch:
                new.append(stay + row[k])
                step.append(k)
            else:
                new.append(switch + row[k])
                step.append(leader)
        back.append(step)
        best = new
    choice = max(range(width), key=best.__getitem__)
    path = [choice]
    for step in reversed(back):
        choice = step[choice]
        path.append(choice)
    path.reverse()
    return path


def apply_plan(window: ContextWindow, units: Mapping[int, Unit], plan: Plan) -> set[int]:
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
    for root, group in plan.frozen_group.items():
        if forest.is_root(root) and not forest.root(root).dropped:
            frozen_size = forest.size(root) - sum(
                len(units[k].ids) for k, r in plan.topic_of.items() if r == root and k in units
            )
            overlap.setdefault(group, Counter())[root] += max(1, frozen_size)
    target: dict[int, int] = {}
    taken: set[int] = set()
    ranked = sorted(
        ((count, group, root) for group, c in overlap.items() for root, count in c.items()),
        reverse=True,
    )
    for _, group, root in ranked:
        if group not in target and root not in taken:
            target[group] = root
            taken.add(root)
    # A topic whose older members joined another group's topic merges into it.
    for root, group in plan.frozen_group.items():
        goal = target.get(group)
        if goal is None or root == goal or not forest.is_root(root) or not forest.is_root(goal):
            continue
        if forest.root(root).dropped or forest.root(goal).dropped:
            continue
        survivor = window.merge_topics(root, goal)
        changed |= {root, goal, survivor}
        for group_, topic in list(target.items()):
            if topic in (root, goal):
                target[group_] = survivor
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
    for unit, root, goal in naming:
        if forest.is_root(root) and forest.size(root) == len(unit.ids) and forest.is_root(goal):
            survivor = window.merge_topics(root, goal)
            changed |= {root, goal, survivor}
    return {r for r in changed if forest.is_root(r)}
