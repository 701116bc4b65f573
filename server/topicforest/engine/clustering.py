"""The clustering that re-clustering runs on a window's recent exchanges (see `recluster`):
average-linkage agglomeration, large groups halved, segmental k-means, on exchange vectors;
term weights by how concentrated each term is in a first grouping (for the second).

Pure functions of vectors and pair similarities; the generators yield often (a check point for
the caller's time budget) and return their result through `yield from`.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Generator, Iterator, Mapping, Sequence

from topicforest.engine.embedding import dot, norm_sq

COHESION_RATIO = 0.7  # groups less alike than this share of their own cohesion stay apart
MIN_COHESIVE = 3  # exchanges a group needs before its cohesion is trusted
FRAGMENT_SHARE = 0.07  # and a group with less than this share of the exchanges
FRAGMENT_MOST = 6  # (or than this many) is a fragment: see `fragment_size`
STAY_BONUS = 0.05  # cosine an exchange's current topic is preferred by
SWITCH_PENALTY = 0.4  # cosine a thread pays to change topic between consecutive exchanges
KMEANS_ROUNDS = 6
YIELD_EVERY = 64  # pieces of work between checks of the time budget
POPS_PER_CHECK = 256  # heap pops and pushes between checks (each a few microseconds)
SCORE_EVERY = 16  # exchanges scored against every group between checks
PAIRS_PER_CHECK = 2048  # similarities transformed between checks
LARGE_SHARE = 1 / 3  # a group holding more of the exchanges than this is halved if it can be
MIN_TOPIC_EXCHANGES = 2  # fewer than this: a fragment, not a topic
UNRELATED = 0.0  # cosine of two groups with no word in common: never merged for likeness
CONCENTRATION_POWER = 2  # how steeply a term spread over groups loses weight (`concentrated`)

Vector = dict[str, float]


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


def fragment_size(exchanges: int, least: int) -> int:
    """The exchanges a group of a window of `exchanges` needs to be a topic, not a fragment:
    a share of the window, but never more than `FRAGMENT_MOST`. A share alone grew with the
    window: at 400 exchanges a subject discussed in 25 of them joined its nearest neighbour, so
    a long-lived workspace's many subjects collapsed into a few catch-alls (the dev
    conversations replayed in pairs: purity 0.59 against 0.89 for each alone; 0.82 with
    this). A subject of 6 exchanges is a topic whatever the window's size."""
    return max(least, math.ceil(min(FRAGMENT_SHARE * exchanges, FRAGMENT_MOST)))


def agglomerate(
    items: list[int], similarity: dict[tuple[int, int], float], max_groups: int
) -> Generator[None, None, dict[int, list[int]]]:
    """Average-linkage clustering that keeps two groups apart when they are less alike than
    `COHESION_RATIO` × how alike each is within itself (a local rule: it does not depend on how
    many other subjects, or projects, the window holds); fragments then join their nearest
    group, and the topic cap is a ceiling. Returns groups by their first item (a generator:
    `yield from` gives the result)."""

    def pair(a: int, b: int) -> float:
        return similarity[(a, b)] if (a, b) in similarity else similarity[(b, a)]

    members = {item: [item] for item in items}
    internal = dict.fromkeys(items, 0.0)  # sum of the similarities of a group's pairs
    linkage: dict[tuple[int, int], float] = {}
    version = dict.fromkeys(items, 0)  # bumps when a group grows: older heap entries are stale
    heap: list[tuple[float, int, int, int, int]] = []
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            s = pair(a, b)
            linkage[(a, b)] = s
            heapq.heappush(heap, (-s, a, b, 0, 0))  # heapify at the end: 11 ms in one slice
        if i % 4 == 3:  # ~80,000 pairs for a full window: not in one slice
            yield None

    def link(a: int, b: int) -> float:
        return linkage[(a, b)] if (a, b) in linkage else linkage[(b, a)]

    def cohesion(group: int) -> float | None:
        n = len(members[group])
        return internal[group] / (n * (n - 1) / 2) if n >= MIN_COHESIVE else None

    def merge(a: int, b: int) -> None:
        for other in members:
            if other not in (a, b):
                na, nb = len(members[a]), len(members[b])
                linkage[(a, other)] = (na * link(a, other) + nb * link(b, other)) / (na + nb)
                linkage.pop((other, a), None)
        internal[a] += internal.pop(b) + len(members[a]) * len(members[b]) * link(a, b)
        members[a] += members.pop(b)
        version[a] += 1
        for other in members:
            if other != a:
                heapq.heappush(heap, (-link(a, other), a, other, version[a], version[other]))

    work = 0
    while heap:
        best, a, b, va, vb = heapq.heappop(heap)
        work += 1  # stale and refused pairs are work too: a round pops ~200,000 of them
        if work > POPS_PER_CHECK:
            work = 0
            yield None
        if not _current((best, a, b, va, vb), members, version):
            continue
        if -best <= UNRELATED:
            break  # no two groups left share a word: none merge for likeness
        ca, cb = cohesion(a), cohesion(b)
        if ca is not None and cb is not None and -best < COHESION_RATIO * min(ca, cb):
            continue  # two subjects: each is more alike within itself than to the other
        merge(a, b)
        work += len(members)
        if work > POPS_PER_CHECK:
            work = 0
            yield None
    smallest = fragment_size(len(items), MIN_TOPIC_EXCHANGES)
    while len(members) > 1:
        small = [  # a fragment that shares nothing with any group is a subject of its own
            g
            for g in members
            if len(members[g]) < smallest and any(link(g, o) > UNRELATED for o in members if o != g)
        ]
        if not small and len(members) <= max_groups:
            break
        if small:  # a fragment joins the group it is most like
            a = min(small, key=lambda g: len(members[g]))
            b = max((g for g in members if g != a), key=lambda g: link(a, g))
        else:  # over the ceiling: the two most alike groups merge
            a, b = max(((x, y) for x in members for y in members if x < y), key=lambda p: link(*p))
        merge(b, a) if len(members[b]) >= len(members[a]) else merge(a, b)
        yield None
    return {group: list(ms) for group, ms in members.items()}


def split_large(
    groups: dict[int, list[int]],
    similarity: Mapping[tuple[int, int], float],
    max_groups: int,
) -> Generator[None, None, dict[int, list[int]]]:
    """Halve any group holding more than `LARGE_SHARE` of the exchanges, by what tells its
    parts apart, until none does (or halves would be fragments, or the cap is reached).

    A long conversation about one issue shares its vocabulary throughout, so every exchange
    looks like every other and the agglomeration keeps one catch-all; a person would draw its
    phases (the reproduction, the fix, the regression) as topics of their own. Within a group,
    cosines centered on the group's own mean show what its parts do not share."""
    total = sum(map(len, groups.values()))
    smallest = fragment_size(total, MIN_COHESIVE)
    out = dict(groups)
    queue = [g for g in out if len(out[g]) > LARGE_SHARE * total]
    while queue and len(out) < max_groups:
        key = queue.pop()
        members = out[key]
        inside: dict[tuple[int, int], float] = {}
        for i, a in enumerate(members):
            inside.update(
                ((a, b), similarity[(a, b)] if (a, b) in similarity else similarity[(b, a)])
                for b in members[i + 1 :]
            )
            if i % SCORE_EVERY == SCORE_EVERY - 1:
                yield None
        parts = yield from halves(members, (yield from centered(members, inside)))
        if parts is None or min(map(len, parts)) < smallest:
            continue
        del out[key]
        for half in parts:
            out[min(half)] = half
            if len(half) > LARGE_SHARE * total:
                queue.append(min(half))
    return out


def halves(
    items: list[int], similarity: Mapping[tuple[int, int], float]
) -> Generator[None, None, tuple[list[int], list[int]] | None]:
    """Two sides by average similarity, seeded with the two least alike items."""

    def pair(a: int, b: int) -> float:
        return similarity[(a, b)] if (a, b) in similarity else similarity[(b, a)]

    seed_a, seed_b = min(similarity, key=similarity.__getitem__)
    sides: tuple[list[int], list[int]] = ([seed_a], [seed_b])
    for _ in range(KMEANS_ROUNDS):
        left: list[int] = []
        right: list[int] = []
        for n, item in enumerate(items):
            to_left = sum(pair(item, a) for a in sides[0] if a != item) / len(sides[0])
            to_right = sum(pair(item, b) for b in sides[1] if b != item) / len(sides[1])
            (left if to_left >= to_right else right).append(item)
            if n % SCORE_EVERY == SCORE_EVERY - 1:
                yield None
        if not left or not right:
            return None
        if (left, right) == sides:
            break
        sides = (left, right)
    return sides


def centered(
    items: list[int], similarity: Mapping[tuple[int, int], float]
) -> Generator[None, None, dict[tuple[int, int], float]]:
    """Cosines after subtracting the items' mean direction, from the cosines alone.

    What a project says in every exchange (its services, its config file, "timeout") points
    every vector the same way; left in, subjects that share it look alike and a big group's
    center, which is mostly that shared direction, attracts everything. With unit vectors
    a, b and mean m: a·m is a's average cosine (itself included) and m·m the average of those.
    Done in chunks of pairs (a big group has tens of thousands: not in one slice)."""
    n = len(items)
    row = dict.fromkeys(items, 1.0)  # a·a
    pairs = list(similarity.items())
    for start in range(0, len(pairs), PAIRS_PER_CHECK):
        for (a, b), s in pairs[start : start + PAIRS_PER_CHECK]:
            row[a] += s
            row[b] += s
        yield None
    to_mean = {a: total / n for a, total in row.items()}
    mean_sq = sum(to_mean.values()) / n
    length = {a: math.sqrt(max(1e-9, 1.0 - 2 * r + mean_sq)) for a, r in to_mean.items()}
    out: dict[tuple[int, int], float] = {}
    for start in range(0, len(pairs), PAIRS_PER_CHECK):
        out.update(
            ((a, b), (s - to_mean[a] - to_mean[b] + mean_sq) / (length[a] * length[b]))
            for (a, b), s in pairs[start : start + PAIRS_PER_CHECK]
        )
        yield None
    return out


def _current(
    entry: tuple[float, int, int, int, int],
    members: Mapping[int, object],
    version: Mapping[int, int],
) -> bool:
    _, a, b, va, vb = entry
    return a in members and b in members and version[a] == va and version[b] == vb


def concentrated(
    vectors: Mapping[int, Vector], assignment: Mapping[int, int], idf: Mapping[str, float]
) -> Generator[None, None, dict[str, float]]:
    """`idf` with each term weighed by how concentrated it is in the groups of `assignment`:
    (1 - the entropy of its weight over the groups / log(groups)) ** `CONCENTRATION_POWER`, so a
    term one group holds keeps its weight and one spread evenly over all of them has none.

    Document frequency cannot tell a project's words from a subject's: `pool`, `postgres` or
    `DATABASE_URL` come up in a few exchanges of many subjects, so their IDF is high and they
    glue exchanges of different subjects together. Where a first clustering found them tells:
    spread over groups, they are the project's. Squared, not plain: the plain factor moved the
    external set's single-issue threads more (no-query facts 71 -> 68 of 133, with the
    question 130 -> 129; squared: 69 and 130)."""
    mass: dict[str, dict[int, float]] = {}  # term -> group -> its normalized weight there
    for n, (item, group) in enumerate(assignment.items()):
        vector = vectors[item]
        length = math.sqrt(norm_sq(vector, idf)) or 1.0
        for term, value in vector.items():
            spread = mass.setdefault(term, {})
            spread[group] = spread.get(group, 0.0) + value / length
        if n % SCORE_EVERY == SCORE_EVERY - 1:
            yield None
    most = math.log(len(set(assignment.values()))) or 1.0
    weights: dict[str, float] = {}  # the vectors' terms only: the vocabulary may be far larger
    for n, (term, spread) in enumerate(mass.items()):
        total = sum(spread.values())
        weights[term] = idf.get(term, 0.0)
        if total > 0 and len(spread) > 1:
            entropy = -sum(m / total * math.log(m / total) for m in spread.values() if m > 0)
            weights[term] *= max(0.0, 1.0 - entropy / most) ** CONCENTRATION_POWER
        if n % PAIRS_PER_CHECK == PAIRS_PER_CHECK - 1:
            yield None
    return weights


def provisional_home(assignment: Mapping[int, int], topic_of: Mapping[int, int]) -> dict[int, int]:
    """Per unit, the group that stands for its current topic (the group holding most of that
    topic's exchanges), so staying there can be preferred."""
    votes: dict[int, Counter[int]] = {}
    for item, group in assignment.items():
        topic = topic_of.get(item)
        if topic is not None:
            votes.setdefault(topic, Counter())[group] += 1
    topic_group = {topic: c.most_common(1)[0][0] for topic, c in votes.items()}
    return {item: topic_group[topic_of[item]] for item in topic_of if topic_of[item] in topic_group}


def segmental_kmeans(
    sequences: list[list[int]],
    vectors: Mapping[int, Vector],
    assignment: dict[int, int],
    idf: Mapping[str, float],
    home: Mapping[int, int],
    mean: Vector,
) -> Iterator[None]:
    """Reassign exchanges to the nearest group, per thread along a Viterbi path that pays
    `SWITCH_PENALTY` for each change of group, and `STAY_BONUS` more for the group standing
    for an exchange's current topic (the tree should not jump for a marginal gain)."""
    # Centered as the pair cosines are (see `centered`): (x - m)·(C - k m) for a group of k
    mean_sq = norm_sq(mean, idf)
    lengths: dict[int, float] = {}
    to_mean: dict[int, float] = {}
    for n, (item, vector) in enumerate(vectors.items()):  # a long exchange's terms: many
        lengths[item] = math.sqrt(norm_sq(vector, idf)) or 1.0
        to_mean[item] = dot(vector, mean, idf) / lengths[item]
        if n % SCORE_EVERY == SCORE_EVERY - 1:
            yield None
    for _ in range(KMEANS_ROUNDS):
        centers: dict[int, Vector] = {}
        for n, (item, group) in enumerate(assignment.items()):
            scale = 1.0 / lengths[item]
            center = centers.setdefault(group, {})
            for term, value in vectors[item].items():
                center[term] = center.get(term, 0.0) + value * scale
            if n % SCORE_EVERY == SCORE_EVERY - 1:
                yield None
        groups = list(centers)
        sizes = Counter(assignment.values())
        center_mean = [dot(centers[g], mean, idf) for g in groups]
        center_norms = [
            math.sqrt(max(1e-9, norm_sq(centers[g], idf) - 2 * k * cm + k * k * mean_sq))
            for g, cm, k in zip(groups, center_mean, (sizes[g] for g in groups), strict=True)
        ]
        changed = False
        for sequence in sequences:
            scores = []
            for n, item in enumerate(sequence):
                if n % SCORE_EVERY == SCORE_EVERY - 1:  # one thread can hold the whole window
                    yield None
                vector, length, stay = vectors[item], lengths[item], home.get(item)
                own = math.sqrt(max(1e-9, 1.0 - 2 * to_mean[item] + mean_sq))
                scores.append(
                    [
                        STAY_BONUS * (g == stay)
                        + (
                            dot(vector, centers[g], idf) / length
                            - sizes[g] * to_mean[item]
                            - cm
                            + sizes[g] * mean_sq
                        )
                        / (own * norm)
                        for g, norm, cm in zip(groups, center_norms, center_mean, strict=True)
                    ]
                )
            path = viterbi(scores, SWITCH_PENALTY)
            for item, choice in zip(sequence, path, strict=True):
                if assignment.get(item) != groups[choice]:
                    assignment[item] = groups[choice]
                    changed = True
            yield None
        if not changed:
            return


def viterbi(scores: list[list[float]], penalty: float) -> list[int]:
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
