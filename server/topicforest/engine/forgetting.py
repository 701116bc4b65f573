"""Deleting messages (a thread the user deleted) from everything the window keeps (a mixin of
`ContextWindow`)."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable

from topicforest.engine.centroids import CentroidIndex
from topicforest.engine.embedding import Embedder, extract_terms
from topicforest.engine.forest import Forest
from topicforest.engine.keylines import KeyLineState
from topicforest.engine.messages import Message, MessageLog
from topicforest.engine.recall import RecallIndex
from topicforest.engine.recluster import Refiner
from topicforest.engine.reshaping import Reshape
from topicforest.engine.state import Spend, Summary
from topicforest.engine.summarize.extractive import Digest
from topicforest.engine.summary_jobs import Uncovered


class Forgetting:
    """The window's state, less the deleted messages."""

    log: MessageLog
    forest: Forest
    embedder: Embedder
    index: CentroidIndex
    recall: RecallIndex
    refiner: Refiner
    hot: dict[str, deque[Message]]
    hot_tokens: Counter[str]
    summaries: dict[int, Summary]
    spend: dict[int, Spend]
    pinned: set[int]
    expanded: set[int]
    pending_terms: dict[int, Counter[str]]
    fallback_summary: str | None
    summary_digests: dict[tuple[int, ...], Digest]
    reshapes: dict[int, list[Reshape]]
    _last_planted: dict[str, int]
    _uncovered: dict[int, Uncovered]
    _key_lines: dict[int, KeyLineState]

    def forget(self, message_ids: Iterable[int]) -> set[int]:
        """Delete messages (a thread the user deleted) from the hot zones, the forest and the
        log. Topics that lost members shrink (an emptied one vanishes; one whose own message
        went takes its oldest remaining member's id); their summaries, and any other summary
        made from a deleted message, are discarded and made again from what remains; centroids
        are rebuilt from the remaining members and the IDF without the deleted documents.
        Returns the ids of the topics that changed (old and new ids)."""
        gone = set(message_ids)
        messages = self.log.get_many(sorted(gone))
        for thread in {m.thread_id for m in messages}:
            if thread in self.hot:
                zone = deque(m for m in self.hot[thread] if m.id not in gone)
                self.hot[thread] = zone
                self.hot_tokens[thread] = sum(m.tokens for m in zone)
                if not zone:
                    del self.hot[thread], self.hot_tokens[thread]
            if self._last_planted.get(thread) in gone:
                del self._last_planted[thread]
        planted = [m for m in messages if m.id in self.forest]
        changed: set[int] = set()
        if planted:
            self.embedder.forget([extract_terms(m.content) for m in planted])
            renamed = self.forest.remove({m.id for m in planted})
            for old, new in renamed.items():
                changed.add(old)
                self._discard_topic_state(old)
                for flags in (self.pinned, self.expanded):
                    if old in flags:
                        flags.discard(old)
                        if new is not None:
                            flags.add(new)
                spent = self.spend.pop(old, None)
                if new is not None:
                    changed.add(new)
                    if spent:
                        self.spend[new] = spent
                    self._rebuild_centroid(new)
            for root, summary in list(self.summaries.items()):
                if not summary.covered.isdisjoint(gone):
                    del self.summaries[root]
                    changed.add(root)
            self.recall.forget(gone)
            self.refiner.forget(gone)
            self.fallback_summary = None  # a flat summary of everything: made again if needed
            self._uncovered.clear()
            self.summary_digests.clear()
        for message_id in gone:
            self.pending_terms.pop(message_id, None)
        self.log.remove(gone)
        return changed

    def _discard_topic_state(self, root: int) -> None:
        self.summaries.pop(root, None)
        self.index.discard(root)
        self._key_lines.pop(root, None)
        self.reshapes.pop(root, None)

    def _rebuild_centroid(self, root: int) -> None:
        """The topic's centroid from its members again (after some left), with the IDF now."""
        self.index.discard(root)
        for message in self.log.get_many(self.forest.members(root)):
            features = self.embedder.features(message.content)
            self.index.add(root, features, message.tokens, message.timestamp)
