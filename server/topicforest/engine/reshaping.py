"""How topics change shape after the fact (re-clustering moves, splits and merges; the topic
cap), and the record of it that the tree shows: when new messages reshape topics the change is
shown as such, never a silent reshuffle (a mixin of `ContextWindow`).

The record is per topic, newest first, a few entries each, kept in memory: what this window saw
happen, from its own changes or another window's as they are loaded from the store
(`note_loaded`). Windows see the same splits and merges; how many loads a burst of moves arrives
in can differ, so the notes are not shared state (not stored: a restart shows the tree as it was
left, with no notes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from topicforest.engine.centroids import CentroidIndex
from topicforest.engine.config import WindowConfig
from topicforest.engine.embedding import Features
from topicforest.engine.forest import Forest
from topicforest.engine.recluster import Unit
from topicforest.engine.state import Spend, Summary
from topicforest.engine.summarize.base import summary_body

MAX_RESHAPES = 4  # per topic: the latest changes say what happened; older ones are history

ReshapeKind = Literal["splitOff", "split", "merged", "movedIn", "movedOut"]


@dataclass(frozen=True, slots=True)
class Reshape:
    """One change of a topic's shape, from the topic's side: it was `splitOff` `other`, part of
    it was `split` into `other`, `other` was `merged` into it, or `messages` `movedIn` from or
    `movedOut` to `other`."""

    kind: ReshapeKind
    other: int  # the other topic's id (after a merge, no longer a topic)
    other_title: str | None  # its title when it happened, if it had one
    messages: int
    at: float  # seconds since the epoch


class Reshaping:
    """Topic-level changes of the forest, each noted in `reshapes`."""

    config: WindowConfig
    clock: Callable[[], float]
    forest: Forest
    index: CentroidIndex
    summaries: dict[int, Summary]
    spend: dict[int, Spend]
    pinned: set[int]
    expanded: set[int]
    reshapes: dict[int, list[Reshape]]

    def title(self, root: int) -> str:
        raise NotImplementedError  # ContextWindow's

    def move_unit(self, unit: Unit, source: int, target: int) -> bool:
        """Move one exchange between live topics; never the exchange that names its topic."""
        if source in unit.ids or not self.forest.is_root(target):
            return False
        shown = self._shown_title(source)
        for message_id in unit.ids:
            self.forest.move(message_id, target)
        self.index.remove(source, unit.terms, unit.files, unit.symbols, sum(unit.tokens))
        self._add_unit_features(target, unit)
        self._hand_over(source, target, unit.ids)
        self._note_move(source, target, len(unit.ids), shown, new=False)
        return True

    def merge_topics(self, a: int, b: int) -> int:
        """Merge two topics; the larger survives (its id stays)."""
        return self._union(a, b)

    def split_topic(self, root: int, units: list[Unit]) -> int:
        """Split `units` off `root` into a new topic, which keeps `root`'s pinned and expanded
        state; returns its id. The part holding `root`'s own message stays `root`."""
        ids = [m for unit in units for m in unit.ids]
        shown = self._shown_title(root)
        new_root = self.forest.split(root, ids)  # refuses to take `root`'s own message
        for unit in units:
            self.index.remove(root, unit.terms, unit.files, unit.symbols, sum(unit.tokens))
            self._add_unit_features(new_root, unit)
        for flags in (self.pinned, self.expanded):
            if root in flags:
                flags.add(new_root)
        self._hand_over(root, new_root, tuple(ids))
        self._note_move(root, new_root, len(ids), shown, new=True)
        return new_root

    def _add_unit_features(self, root: int, unit: Unit) -> None:
        features = Features(Counter(unit.terms), list(unit.files), list(unit.symbols))
        self.index.add(root, features, sum(unit.tokens), max(unit.timestamps))
        self.index[root].first_time = min(self.index[root].first_time, min(unit.timestamps))

    def _hand_over(self, source: int, target: int, message_ids: tuple[int, ...]) -> None:
        """Messages that moved stay summarized if they were: a model is not paid again for them
        (the target's summary may not name them yet; recall and digests still find them). Only
        a target with no summary at all takes them as new material, and a source whose summary
        lost at least half of what it covered is summarized again from its current members."""
        summary = self.summaries.get(source)
        if summary is None:
            return
        # `covered` keeps them: it is also what the summary was made from (a deletion finds
        # every summary that quoted a deleted message by it); a non-member is never pending.
        was_covered = summary.covered.intersection(message_ids)
        members = self.forest.members(source)
        if len(was_covered) >= sum(1 for m in members if m in summary.covered):
            # The summary (and its title) was mostly about what left: the topic starts afresh
            # from what it holds now rather than keep describing another topic.
            del self.summaries[source]
        receiving = self.summaries.get(target)
        if receiving is not None and was_covered:
            receiving.covered |= was_covered

    def _enforce_max_topics(self) -> None:
        live = self.forest.live_roots()
        while len(live) > self.config.max_topics:
            a, b = self.index.closest_pair(live, {r: self.forest.size(r) for r in live})
            self._union(a, b)
            live = self.forest.live_roots()

    def _union(self, a: int, b: int) -> int:
        shown = {a: self._shown_title(a), b: self._shown_title(b)}
        sizes = {a: self.forest.size(a), b: self.forest.size(b)}
        survivor = self.forest.union(a, b)
        absorbed = b if survivor == a else a
        self._note_merge(survivor, absorbed, shown[absorbed], sizes[absorbed])
        self.index.merge(survivor, absorbed)
        for flags in (self.pinned, self.expanded):
            if absorbed in flags:
                flags.discard(absorbed)
                flags.add(survivor)
        lost = self.summaries.pop(absorbed, None)
        kept = self.summaries.get(survivor)
        if lost and kept:  # the merged topic starts from both summaries; still dirty
            kept.text = kept.text + "\n" + summary_body(lost.text)  # one title line, first
            kept.covered |= lost.covered
            kept.tokens += lost.tokens
        elif lost:
            self.summaries[survivor] = lost
        spent = self.spend.pop(absorbed, None)
        if spent:
            mine = self.spend.setdefault(survivor, Spend())
            mine.calls += spent.calls
            mine.input_tokens += spent.input_tokens
            mine.output_tokens += spent.output_tokens
        return survivor

    def notes(self, root: int) -> tuple[Reshape, ...]:
        """`root`'s notes, each with the other topic's title: the one the tree showed when it
        happened, else (a topic split off since) its title now, kept once that topic is
        summarized (looking titles up on every listing doubled its cost)."""
        notes = self.reshapes.get(root, [])
        out = []
        for i, note in enumerate(notes):
            if note.other_title is None and self.forest.is_root(note.other):
                note = replace(note, other_title=self.title(note.other))
                if note.other in self.summaries:  # the title it keeps
                    notes[i] = note
            out.append(note)
        return tuple(out)

    # -- the record ----------------------------------------------------------------------------
    def _note(self, root: int, kind: ReshapeKind, other: int, title: str | None, n: int) -> None:
        """Note a change on `root`, newest first; the same change again (more moves between
        the same two topics in one round, one exchange at a time) adds to the earlier note."""
        notes = self.reshapes.setdefault(root, [])
        earlier = next((i for i, x in enumerate(notes) if (x.kind, x.other) == (kind, other)), None)
        if earlier is not None:
            note = notes.pop(earlier)
            n += note.messages
            title = note.other_title or title
        notes.insert(0, Reshape(kind, other, title, n, self.clock()))
        del notes[MAX_RESHAPES:]

    def _shown_title(self, root: int) -> str | None:
        """The title the tree shows for `root` once it is summarized (before that the topic is
        new: nothing a person would miss)."""
        return self.title(root) if root in self.summaries else None

    def _note_move(
        self, source: int, target: int, messages: int, shown: str | None, *, new: bool
    ) -> None:
        self._note(target, "splitOff" if new else "movedIn", source, shown, messages)
        self._note(source, "split" if new else "movedOut", target, None, messages)

    def _note_merge(
        self, survivor: int, absorbed: int, absorbed_title: str | None, messages: int
    ) -> None:
        """A merge of a topic the tree showed with a title (its `messages` joined `survivor`);
        a new exchange's topic that the cap folds into another at once was never one a person
        saw."""
        self.reshapes.pop(absorbed, None)
        if absorbed_title is not None:
            self._note(survivor, "merged", absorbed, absorbed_title, messages)

    def note_loaded(
        self,
        roots_before: set[int],
        was: Mapping[int, int],
        titles: Mapping[int, str],
    ) -> None:
        """Derive the record from another process's changes, just loaded: `roots_before`, the
        topics before; `was`, the topic each member that joined a topic was in before (members
        new to the forest are graduations, not reshapes); `titles`, the titled topics' titles
        before. A topic that appeared holding others' members was split off them; one that
        vanished was merged into the topic its own message is in now."""
        moves: Counter[tuple[int, int]] = Counter()
        for member, source in was.items():
            if member in self.forest:
                target = self.forest.find(member)
                if target != source and source in roots_before:
                    moves[source, target] += 1
        for gone in roots_before - set(self.forest.roots()):
            if gone in self.forest:
                survivor = self.forest.find(gone)
                self._note_merge(survivor, gone, titles.get(gone), moves.pop((gone, survivor), 0))
            else:
                self.reshapes.pop(gone, None)
        for (source, target), n in moves.items():
            if self.forest.is_root(source):
                new = target not in roots_before
                self._note_move(source, target, n, titles.get(source), new=new)
