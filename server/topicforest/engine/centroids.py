"""Per-topic centroids: raw term counts plus cached norms and pairwise dot products.

A centroid is the size-weighted sum of its members' raw term vectors. Norms and pair dot products
are kept incrementally (adding a message costs O(terms in the message) per topic, merging two
topics O(topics)), and recomputed from scratch whenever the embedder starts a new IDF epoch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from topicforest.engine.embedding import Embedder, Features, dot, norm_sq

MAX_ENTITIES = 40  # files / symbols remembered per topic for display and ranking


@dataclass(slots=True)
class Centroid:
    terms: Counter[str] = field(default_factory=Counter)
    norm_sq: float = 0.0
    files: Counter[str] = field(default_factory=Counter)
    symbols: Counter[str] = field(default_factory=Counter)
    tokens: int = 0
    first_time: float = 0.0
    last_time: float = 0.0

    def absorb_entities(self, files: Iterable[str], symbols: Iterable[str]) -> None:
        self.files.update(files)
        self.symbols.update(symbols)
        for counter in (self.files, self.symbols):
            if len(counter) > MAX_ENTITIES * 2:
                kept = counter.most_common(MAX_ENTITIES)
                counter.clear()
                counter.update(dict(kept))


class CentroidIndex:
    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.centroids: dict[int, Centroid] = {}
        self._dots: dict[tuple[int, int], float] = {}
        self._epoch = embedder.epoch

    def __getitem__(self, root: int) -> Centroid:
        return self.centroids[root]

    def add(self, root: int, features: Features, tokens: int, timestamp: float) -> None:
        """Add one message's features to `root`'s centroid (creating it for a new singleton)."""
        self.sync_epoch()
        idf = self.embedder.idf
        centroid = self.centroids.get(root)
        if centroid is None:
            centroid = self.centroids[root] = Centroid(first_time=timestamp)
        terms = centroid.terms
        delta = 0.0
        for term, count in features.terms.items():
            w = idf.get(term, 0.0)
            delta += (2 * terms.get(term, 0) * count + count * count) * w * w
        centroid.norm_sq += delta
        for key in [k for k in self._dots if root in k]:
            other = key[0] if key[1] == root else key[1]
            self._dots[key] += dot(features.terms, self.centroids[other].terms, idf)
        terms.update(features.terms)
        centroid.absorb_entities(features.files, features.symbols)
        centroid.tokens += tokens
        centroid.first_time = min(centroid.first_time, timestamp)
        centroid.last_time = max(centroid.last_time, timestamp)

    def remove(
        self,
        root: int,
        terms: Counter[str],
        files: Iterable[str],
        symbols: Iterable[str],
        tokens: int,
    ) -> None:
        """Take one exchange's features out of `root`'s centroid (re-clustering moved it).

        O(terms of the exchange), like `add`: a big topic's vocabulary is tens of thousands of
        terms, and a round may move a hundred exchanges."""
        self.sync_epoch()
        centroid = self.centroids[root]
        idf = self.embedder.idf
        held = centroid.terms
        delta = 0.0
        for term, count in terms.items():
            have = held.get(term, 0)
            take = min(count, have)
            if take <= 0:
                continue
            weight = idf.get(term, 0.0)
            delta += (take * take - 2 * have * take) * weight * weight  # (have-take)² - have²
            if have > take:
                held[term] = have - take
            else:
                del held[term]
        centroid.norm_sq = max(0.0, centroid.norm_sq + delta)
        for counter, names in ((centroid.files, files), (centroid.symbols, symbols)):
            counter.subtract(names)  # bounded to a few dozen names: rebuilding is cheap
            for name in [n for n, c in counter.items() if c <= 0]:
                del counter[name]
        centroid.tokens = max(0, centroid.tokens - tokens)
        self._dots = {k: v for k, v in self._dots.items() if root not in k}

    def merge(self, survivor: int, absorbed: int) -> None:
        """Fold `absorbed` into `survivor` (after the forest's union)."""
        self.sync_epoch()
        a, b = self.centroids[survivor], self.centroids.pop(absorbed)
        ab = self.pair_dot(survivor, absorbed, a, b)
        a.norm_sq = a.norm_sq + b.norm_sq + 2 * ab
        new_dots: dict[tuple[int, int], float] = {}
        for key, value in self._dots.items():
            if survivor in key or absorbed in key:
                continue
            new_dots[key] = value
        for other in self.centroids:
            if other == survivor:
                continue
            ka, kb = _key(survivor, other), _key(absorbed, other)
            if ka in self._dots and kb in self._dots:
                new_dots[ka] = self._dots[ka] + self._dots[kb]
        self._dots = new_dots
        a.terms.update(b.terms)
        a.absorb_entities(b.files.elements(), b.symbols.elements())
        a.tokens += b.tokens
        a.first_time = min(a.first_time, b.first_time)
        a.last_time = max(a.last_time, b.last_time)

    def put(self, root: int, centroid: Centroid) -> None:
        """Give `root` this centroid (a stored copy's; its norm is the caller's to set)."""
        self.discard(root)  # also forgets cached pair products that involved it
        self.centroids[root] = centroid

    def discard(self, root: int) -> None:
        self.centroids.pop(root, None)
        self._dots = {k: v for k, v in self._dots.items() if root not in k}

    def prune_terms(self, known: Mapping[str, int]) -> None:
        """Forget terms the embedder pruned from its vocabulary."""
        for centroid in self.centroids.values():
            for term in [t for t in centroid.terms if t not in known]:
                del centroid.terms[term]

    # -- similarity ------------------------------------------------------------------------
    def similarity(self, root: int, vector: Mapping[str, int], vector_norm_sq: float) -> float:
        self.sync_epoch()
        centroid = self.centroids[root]
        denom = math.sqrt(vector_norm_sq * centroid.norm_sq)
        return dot(vector, centroid.terms, self.embedder.idf) / denom if denom > 0 else 0.0

    def pair_similarity(self, a: int, b: int) -> float:
        self.sync_epoch()
        ca, cb = self.centroids[a], self.centroids[b]
        denom = math.sqrt(ca.norm_sq * cb.norm_sq)
        return self.pair_dot(a, b, ca, cb) / denom if denom > 0 else 0.0

    def pair_dot(self, a: int, b: int, ca: Centroid, cb: Centroid) -> float:
        key = _key(a, b)
        value = self._dots.get(key)
        if value is None:
            value = self._dots[key] = dot(ca.terms, cb.terms, self.embedder.idf)
        return value

    def nearest(self, vector: Mapping[str, int], roots: Iterable[int]) -> tuple[int | None, float]:
        vnorm = norm_sq(vector, self.embedder.idf)
        best, best_sim = None, -1.0
        for root in roots:
            sim = self.similarity(root, vector, vnorm)
            if sim > best_sim:
                best, best_sim = root, sim
        return best, best_sim

    def closest_pair(self, roots: list[int], sizes: Mapping[int, int]) -> tuple[int, int]:
        """The pair whose merge costs least by Ward's criterion on cosine distance.

        Plain "most similar centroids" snowballs: a big topic's centroid covers most of the
        vocabulary, so it wins every comparison and swallows everything. Weighting the distance by
        n_a*n_b/(n_a+n_b) makes small topics merge into their nearest neighbour first.
        """
        best = (roots[0], roots[1])
        best_cost = math.inf
        for i, a in enumerate(roots):
            for b in roots[i + 1 :]:
                na, nb = sizes[a], sizes[b]
                cost = (na * nb / (na + nb)) * (1.0 - self.pair_similarity(a, b))
                if cost < best_cost:
                    best, best_cost = (a, b), cost
        return best

    def sync_epoch(self) -> None:
        """Every norm at the embedder's current IDF epoch (done at first use after a new one;
        a window that loaded a new epoch does it at once, so no chat turn's render pays it)."""
        if self._epoch == self.embedder.epoch:
            return
        self._epoch = self.embedder.epoch
        self.prune_terms(self.embedder.df)
        idf = self.embedder.idf
        for centroid in self.centroids.values():
            centroid.norm_sq = norm_sq(centroid.terms, idf)
        self._dots.clear()


def _key(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)
