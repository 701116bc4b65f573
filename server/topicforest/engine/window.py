"""The union-find context window: hot zones per thread, a shared forest of topics, summaries.

append() is O(1): it validates, counts tokens, logs the message and pushes it on its thread's hot
zone. graduate() (run by whoever maintains the forest) moves each thread's overflow beyond its hot
budget into the forest, clustering by code-aware TF-IDF. Summaries are made elsewhere (see
`resolver`) from `summary_jobs()` and applied with `apply_summary()`, which discards stale results.

Its upkeep and bookkeeping sit beside it, each a mixin over the window's own state: summary jobs
(`summary_jobs`), topics reshaped after the fact and the record of it (`reshaping`), key lines
(`key_line_upkeep`) and deletion (`forgetting`).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from topicforest.engine.centroids import CentroidIndex
from topicforest.engine.config import WindowConfig
from topicforest.engine.embedding import Embedder, norm_sq
from topicforest.engine.errors import InvalidMessage, UnknownTopic
from topicforest.engine.forest import Forest
from topicforest.engine.forgetting import Forgetting
from topicforest.engine.key_line_upkeep import KeyLineUpkeep
from topicforest.engine.keylines import KeyLineState
from topicforest.engine.messages import (
    InMemoryMessageLog,
    Message,
    MessageLog,
    validate_content,
    validate_role,
)
from topicforest.engine.recall import RecallIndex
from topicforest.engine.recluster import Refiner, Unit
from topicforest.engine.render import RenderedContext
from topicforest.engine.render import prepare as prepare_render
from topicforest.engine.render import render as render_context
from topicforest.engine.reshaping import Reshape, Reshaping
from topicforest.engine.state import Spend, StateDelta, Summary, TopicState, WindowState
from topicforest.engine.summarize.base import (
    summary_body,
)
from topicforest.engine.summarize.extractive import Digest
from topicforest.engine.summary_jobs import SummaryJobs, Uncovered
from topicforest.engine.titles import Titles
from topicforest.engine.tokens import TokenCounter, estimate_tokens

LOW_INFORMATION_TERMS = 8  # fewer distinct terms than this: an exchange follows the one before
CHATTER_TOKENS = 40  # an exchange shorter than this does too
CONTINUITY_BONUS = 0.05
SUMMARY_OVERSIZE = 3  # summaries keep more than a render share; render cuts them to fit


@dataclass(frozen=True)
class TopicView:
    id: int
    title: str
    summary: str | None
    pending: bool
    message_count: int
    source_tokens: int
    summary_tokens: int
    pinned: bool
    expanded: bool
    dropped: bool
    files: list[str]
    symbols: list[str]
    first_time: float
    last_time: float
    spend: Spend = field(default_factory=Spend)
    reshapes: tuple[Reshape, ...] = ()  # newest first: how new messages reshaped it lately


class ContextWindow(SummaryJobs, Reshaping, KeyLineUpkeep, Forgetting):
    def __init__(
        self,
        config: WindowConfig | None = None,
        *,
        log: MessageLog | None = None,
        count: TokenCounter = estimate_tokens,
        exact_count: TokenCounter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config or WindowConfig()
        self.log: MessageLog = log if log is not None else InMemoryMessageLog()
        self.count = count  # fast, used on the hot path
        self.exact_count = exact_count  # the model's tokenizer, if loaded: verifies each render
        self.clock = clock
        self.last_thread: str | None = None  # the thread this process appended to last
        self.reset()

    def reset(self) -> None:
        """Empty the window, as the constructor left it (same config, log and counters)."""
        self.embedder = Embedder(self.config.max_vocabulary, self.config.workspace_root)
        self.forest = Forest()
        self.index = CentroidIndex(self.embedder)
        self.recall = RecallIndex()
        self._prunes_seen = 0
        self.hot: dict[str, deque[Message]] = {}
        self.hot_tokens: Counter[str] = Counter()
        self.summaries: dict[int, Summary] = {}
        self.spend: dict[int, Spend] = {}
        self.pinned: set[int] = set()
        self.expanded: set[int] = set()
        self.pending_terms: dict[int, Counter[str]] = {}  # members no summary covers yet
        self.fallback_summary: str | None = None
        self.titles = Titles(self, 4 * self.config.max_topics + 64)
        # per topic: its members no summary covers yet, as last scanned (see `uncovered`)
        self._uncovered: dict[int, Uncovered] = {}
        self.summary_digests: dict[tuple[int, ...], Digest] = {}  # render cuts summaries to fit
        self._last_planted: dict[str, int] = {}  # per thread, the newest graduated message
        self.wants_fallback = False  # a render found topics but none fitted; see resolver
        self.refiner = Refiner()  # background re-clustering of recent exchanges
        self._key_lines: dict[int, KeyLineState] = {}  # per topic, collected so far
        self.reshapes: dict[int, list[Reshape]] = {}  # per topic, newest first (`reshaping`)

    # -- persistent state (the contract with a store: see `state`) ---------------------------
    def state(self) -> WindowState:
        """A read-only view of what a store keeps (the window's own objects: cheap)."""
        forest, embedder = self.forest, self.embedder
        pinned, expanded = self.pinned, self.expanded
        return WindowState(
            topics={
                root: TopicState(
                    info.order,
                    info.version,
                    info.dropped,
                    root in pinned,
                    root in expanded,
                    info.members,
                )
                for root, info in forest.items()
            },
            centroids=self.index.centroids,
            summaries=self.summaries,
            spend=self.spend,
            pending_terms=self.pending_terms,
            last_planted=self._last_planted,
            df=embedder.df,
            idf=embedder.idf,
            n_docs=embedder.n_docs,
            docs_at_epoch=embedder.docs_at_epoch,
            next_order=forest.next_order,
            fallback_summary=self.fallback_summary,
            epoch=embedder.epoch,
            planted=forest,
        )

    def take_vocabulary_changes(self) -> set[str] | None:
        """The terms whose df or IDF changed since the last call (None: maybe all of them)."""
        return self.embedder.take_changes()

    def apply(self, delta: StateDelta) -> None:
        """Bring the window up to a stored copy's state (see `StateDelta`)."""
        new_epoch = False
        if delta.vocabulary is not None:
            new_epoch = self.embedder.restore(delta.vocabulary)
        if delta.forest is not None:
            part = delta.forest
            forest = self.forest
            before = set(forest.roots())
            # where the members that joined a topic were: moves and splits in another window
            was = {m: forest.find(m) for _, new in part.grown.values() for m in new if m in forest}
            losing = set(was.values()) | (before - part.roots.keys())
            titles = {r: self.title(r) for r in losing if r in self.summaries}  # as shown
            forest.update_roots(part.roots, part.grown, part.next_order)
            self.pinned, self.expanded = part.pinned, part.expanded
            self.note_loaded(before, was, titles)
        index = self.index
        for root in [r for r in index.centroids if not self.forest.is_root(r)]:
            index.discard(root)
        idf = self.embedder.idf
        for root, centroid in delta.centroids.items():
            if not new_epoch:  # else the index recomputes every norm at the new epoch
                centroid.norm_sq = norm_sq(centroid.terms, idf)
            index.put(root, centroid)
        for root in delta.summaries_gone:
            del self.summaries[root]
        self.summaries.update(delta.summaries)
        for root in delta.spend_gone:
            del self.spend[root]
        self.spend.update(delta.spend)
        if delta.last_planted is not None:
            self._last_planted = dict(delta.last_planted)
        for message_id in delta.pending_gone:
            del self.pending_terms[message_id]
        self.pending_terms.update(delta.pending_terms)
        if delta.hot is not None:
            self.hot.clear()
            self.hot_tokens.clear()
            for message in delta.hot:
                self.push_hot(message)
        self.fallback_summary = delta.fallback_summary
        if delta.recall is not None:
            self.recall = delta.recall
        if new_epoch:  # every norm now: at 100,000 messages ~8 ms, the next render's otherwise
            index.sync_epoch()

    # -- messages --------------------------------------------------------------------------
    def append(
        self,
        thread_id: str,
        role: str,
        content: object,
        *,
        timestamp: float | None = None,
        cancelled: bool = False,
    ) -> Message:
        """Validate and store a message verbatim; raises InvalidMessage with no state change."""
        if not isinstance(thread_id, str) or not thread_id or len(thread_id) > 200:
            raise InvalidMessage("thread id must be a non-empty string of at most 200 characters")
        text = validate_content(content, self.config.max_message_chars)
        valid_role = validate_role(role)  # before an id is taken (a team memory: a sequence)
        message = Message(
            id=self.log.next_id(),
            thread_id=thread_id,
            role=valid_role,
            content=text,
            timestamp=self.clock() if timestamp is None else timestamp,
            tokens=self.count(text),
            cancelled=cancelled,
        )
        self.log.add(message)
        self.push_hot(message)
        self.last_thread = thread_id
        return message

    def push_hot(self, message: Message) -> None:
        """Put an already-stored message on its thread's hot zone."""
        self.hot.setdefault(message.thread_id, deque()).append(message)
        self.hot_tokens[message.thread_id] += message.tokens

    def hot_messages(self, thread_id: str) -> list[Message]:
        return list(self.hot.get(thread_id, ()))

    def threads(self) -> list[str]:
        return list(self.hot)

    # -- graduation ------------------------------------------------------------------------
    def graduate(self, thread_id: str | None = None) -> list[Message]:
        """Move overflow beyond each thread's hot budget into the forest; returns what moved."""
        moved: list[Message] = []
        for tid in [thread_id] if thread_id is not None else list(self.hot):
            moved += self._graduate_thread(tid, self.config.hot_budget)
        return moved

    def flush_thread(self, thread_id: str) -> list[Message]:
        """Graduate a thread's whole hot zone (idle thread, closed window)."""
        return self._graduate_thread(thread_id, 0)

    def flush_idle(self, now: float, idle_seconds: float) -> list[str]:
        """Flush every thread whose newest message is `idle_seconds` old at `now`; their ids."""
        idle = [
            t for t, zone in self.hot.items() if zone and now - zone[-1].timestamp >= idle_seconds
        ]
        for thread in idle:
            self.flush_thread(thread)
        return idle

    def _graduate_thread(self, thread_id: str, keep_tokens: int) -> list[Message]:
        zone = self.hot.get(thread_id)
        moved: list[Message] = []
        if not zone:
            return moved
        # Keep at least the newest message unless flushing, so the trigger can always make progress
        # (a single oversized message never blocks graduation of the ones before it). Then keep
        # going while the next message is an assistant reply: the hot zone starts at a user turn.
        keep_min = 1 if keep_tokens > 0 else 0
        while len(zone) > keep_min and (
            self.hot_tokens[thread_id] > keep_tokens or (moved and zone[0].role == "assistant")
        ):
            message = zone.popleft()
            self.hot_tokens[thread_id] -= message.tokens
            moved.append(message)
        if not zone:
            del self.hot[thread_id]
            del self.hot_tokens[thread_id]
        for exchange in _exchanges(moved):
            self._plant(exchange)
        return moved

    def _plant(self, exchange: list[Message]) -> None:
        """Put one exchange (a user turn and its replies) into the forest, all in one topic.

        Deciding per exchange rather than per message matters: short user turns ("util is 85%
        now, but...") say little on their own and their reply says what the topic is.
        """
        features = [self.embedder.embed(m.content) for m in exchange]
        combined: Counter[str] = Counter()
        for f in features:
            combined.update(f.terms)
        thread_id = exchange[0].thread_id
        live = self.forest.live_roots()
        best, similarity = self.index.nearest(combined, live) if live else (None, 0.0)
        previous = self._last_planted.get(thread_id)
        follows = (
            self.forest.find(previous) if previous is not None and previous in self.forest else None
        )
        chatter = is_chatter(combined, sum(m.tokens for m in exchange))
        if follows is not None and not self.forest.root(follows).dropped:
            if chatter:
                # Chatter ("thanks, that worked") has no topic of its own: it stays with the
                # exchange it answers instead of starting a singleton that crowds out real topics.
                best, similarity = follows, 1.0
            else:
                vnorm = norm_sq(combined, self.embedder.idf)
                own = self.index.similarity(follows, combined, vnorm) + CONTINUITY_BONUS
                if own >= similarity:
                    best, similarity = follows, own
        root = best if best is not None and similarity >= self.config.merge_threshold else None
        for message, feature in zip(exchange, features, strict=True):
            if root is None:
                root = self.forest.add(message.id)
            else:
                self.forest.attach(message.id, root)
            self.index.add(root, feature, message.tokens, message.timestamp)
            self.recall.add(message.id, feature.terms, message.tokens)
            self.pending_terms[message.id] = feature.terms
        if self.embedder.prunes != self._prunes_seen:
            self._prunes_seen = self.embedder.prunes
            self.recall.prune(self.embedder.df)
        self._last_planted[thread_id] = exchange[-1].id
        self.refiner.add(
            Unit(
                ids=tuple(m.id for m in exchange),
                thread_id=thread_id,
                message_terms=tuple(f.terms for f in features),
                files=tuple(f for feature in features for f in feature.files),
                symbols=tuple(s for feature in features for s in feature.symbols),
                tokens=tuple(m.tokens for m in exchange),
                timestamps=tuple(m.timestamp for m in exchange),
                chatter=chatter,
            )
        )
        self._enforce_max_topics()

    # -- re-clustering (upkeep) ----------------------------------------------------------------
    @property
    def refine_pending(self) -> bool:
        return self.refiner.pending

    def refine(self, budget_seconds: float = 0.05, *, settle: bool = False) -> set[int]:
        """One bounded slice of re-clustering (see `recluster`); returns the changed topics.
        `settle`: the user is away, so even a few new exchanges are worth a round."""
        return self.refiner.step(self, budget_seconds, settle=settle)

    # -- topics ----------------------------------------------------------------------------
    def topic_ids(self, *, include_dropped: bool = True) -> list[int]:
        return self.forest.roots(include_dropped=include_dropped)

    def topic(self, topic_id: int) -> TopicView:
        root = self._root(topic_id)
        info = self.forest.root(root)
        centroid = self.index[root]
        summary = self.summaries.get(root)
        return TopicView(
            id=root,
            title=self.title(root),
            summary=summary_body(summary.text) if summary else None,
            pending=self.is_dirty(root),
            message_count=len(info.members),
            source_tokens=centroid.tokens,
            summary_tokens=summary.tokens if summary else 0,
            pinned=root in self.pinned,
            expanded=root in self.expanded,
            dropped=info.dropped,
            files=[f for f, _ in centroid.files.most_common(8)],
            symbols=[s for s, _ in centroid.symbols.most_common(8)],
            first_time=centroid.first_time,
            last_time=centroid.last_time,
            spend=self.spend.get(root, Spend()),
            reshapes=self.notes(root),
        )

    def topics(self) -> list[TopicView]:
        return [self.topic(r) for r in self.forest.roots()]

    def title(self, root: int) -> str:
        """What a person would call the topic (`titles.py`): only stored state decides, so every
        window shows the same."""
        return self.titles.title(root)

    def members(self, topic_id: int) -> list[Message]:
        return self.log.get_many(self.member_ids(topic_id))

    def member_ids(self, topic_id: int) -> list[int]:
        """The topic's message ids in conversation order (a merge or a move appends members
        out of it; ids grow with time)."""
        return sorted(self.forest.members(self._root(topic_id)))

    def _root(self, topic_id: object) -> int:
        if not isinstance(topic_id, int) or isinstance(topic_id, bool):
            raise UnknownTopic(f"topic id must be an integer, not {topic_id!r}")
        if not self.forest.is_root(topic_id):
            raise UnknownTopic(f"unknown topic {topic_id}")
        return topic_id

    def drop(self, topic_id: int) -> None:
        self.forest.drop(self._root(topic_id))

    def restore(self, topic_id: int) -> None:
        self.forest.restore(self._root(topic_id))
        self._enforce_max_topics()

    def pin(self, topic_id: int, pinned: bool = True) -> None:
        root = self._root(topic_id)
        (self.pinned.add if pinned else self.pinned.discard)(root)

    def expand(self, topic_id: int) -> list[Message]:
        root = self._root(topic_id)
        self.expanded.add(root)
        return self.members(root)

    def collapse(self, topic_id: int) -> None:
        self.expanded.discard(self._root(topic_id))

    # -- render ----------------------------------------------------------------------------
    def render(
        self,
        query: str | None = None,
        active_file: str | None = None,
        thread_id: str | None = None,
        upto: int | None = None,
    ) -> RenderedContext:
        rendered = render_context(
            self, query=query, active_file=active_file, thread_id=thread_id, upto=upto
        )
        if rendered.fallback:  # topics exist but none fitted: the resolver makes a flat summary
            self.wants_fallback = True
        return rendered

    def prepare_render(self) -> None:
        """Bring what renders cache up to date with the latest changes (see `render.prepare`),
        so that the next chat turn's render does not pay for them. Its room is that of the
        thread last appended to here: the next question most likely comes from there."""
        self.index.sync_epoch()
        prepare_render(self, self.last_thread if self.last_thread in self.hot else None)

    def search(self, query: str, limit: int = 10) -> list[tuple[int, float]]:
        vector = self.embedder.embed_query(query)
        if not vector:
            return []
        vnorm = norm_sq(vector, self.embedder.idf)
        scored = [(r, self.index.similarity(r, vector, vnorm)) for r in self.forest.roots()]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: -s[1])[:limit]


def is_chatter(terms: Counter[str], tokens: int) -> bool:
    """An exchange that says too little to have a topic of its own ("thanks, that worked" and
    its reply): it stays with the one it answers instead of starting a topic that crowds out
    real ones."""
    return len(terms) < LOW_INFORMATION_TERMS or tokens < CHATTER_TOKENS


def _exchanges(messages: list[Message]) -> list[list[Message]]:
    """Split a run of messages into exchanges, each starting at a user message."""
    groups: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups
