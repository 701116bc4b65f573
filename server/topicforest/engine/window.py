"""The union-find context window: hot zones per thread, a shared forest of topics, summaries.

append() is O(1): it validates, counts tokens, logs the message and pushes it on its thread's hot
zone. graduate() (run by whoever maintains the forest) moves each thread's overflow beyond its hot
budget into the forest, clustering by code-aware TF-IDF. Summaries are made elsewhere (see
`resolver`) from `summary_jobs()` and applied with `apply_summary()`, which discards stale results.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from topicforest.engine.centroids import CentroidIndex
from topicforest.engine.config import WindowConfig
from topicforest.engine.embedding import Embedder, Features, extract_terms, norm_sq
from topicforest.engine.errors import InvalidMessage, UnknownTopic
from topicforest.engine.forest import Forest, list_changes
from topicforest.engine.keylines import KeyLine, KeyLineState, pick
from topicforest.engine.keylines import phrases as message_phrases
from topicforest.engine.messages import (
    InMemoryMessageLog,
    Message,
    MessageLog,
    validate_content,
    validate_role,
)
from topicforest.engine.passages import condense
from topicforest.engine.recall import RecallIndex
from topicforest.engine.recluster import Refiner, Unit
from topicforest.engine.render import RenderedContext
from topicforest.engine.render import prepare as prepare_render
from topicforest.engine.render import render as render_context
from topicforest.engine.state import Spend, StateDelta, Summary, TopicState, WindowState
from topicforest.engine.summarize.base import (
    TITLE_PREFIX,
    SummaryRequest,
    SummaryResult,
    model_title,
    summary_body,
)
from topicforest.engine.summarize.extractive import Digest
from topicforest.engine.titles import Titles
from topicforest.engine.tokens import TokenCounter, estimate_tokens

LOW_INFORMATION_TERMS = 8  # fewer distinct terms than this: an exchange follows the one before
CHATTER_TOKENS = 40  # an exchange shorter than this does too
CONTINUITY_BONUS = 0.05
SUMMARY_OVERSIZE = 3  # summaries keep more than a render share; render cuts them to fit
MAX_JOB_TOKENS = 6000
SUMMARY_MESSAGE_TOKENS = 400  # a message longer than this is condensed for the summarizer
KEY_LINE_CHUNK = 16  # messages read per step while collecting a topic's key lines
MIN_SUMMARY_TOKENS = 40  # source tokens per summarize call; bigger backlogs take several rounds


class Uncovered(NamedTuple):
    """A topic's members no summary covered when last scanned (`ContextWindow.uncovered`)."""

    version: int  # the topic's, then
    summary: Summary | None
    covered: int  # how many members the summary covered (it can grow in place)
    members: list[int]  # the member list scanned (a copy)
    ids: list[int]


@dataclass(frozen=True)
class SummaryJob:
    topic_id: int
    version: int
    request: SummaryRequest
    message_ids: tuple[int, ...]


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


class ContextWindow:
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
            self.forest.update_roots(part.roots, part.grown, part.next_order)
            self.pinned, self.expanded = part.pinned, part.expanded
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

    def _enforce_max_topics(self) -> None:
        live = self.forest.live_roots()
        while len(live) > self.config.max_topics:
            a, b = self.index.closest_pair(live, {r: self.forest.size(r) for r in live})
            self._union(a, b)
            live = self.forest.live_roots()

    def _union(self, a: int, b: int) -> int:
        survivor = self.forest.union(a, b)
        absorbed = b if survivor == a else a
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

    # -- key lines (upkeep) --------------------------------------------------------------------
    def prepare_key_lines(self, budget_seconds: float = 0.05, *, rank: bool = True) -> bool:
        """Collect the key lines of topics that changed, for renders with no query, for about
        `budget_seconds` (the rest waits for the next round: member lists mostly grow at their
        end, so a topic picks up where it stopped), then (`rank`) rank them; returns whether
        all topics are done.

        Upkeep ranks only once the user pauses: a big topic's ranking costs milliseconds and
        is stale again after its next graduation, in every window of a busy team; a render
        with no query ranks what it needs itself."""
        deadline = time.perf_counter() + budget_seconds
        live = self.forest.live_roots()
        for root in live:
            info = self.forest.root(root)
            state = self._key_lines.get(root)
            if state is None or not state.continues(info.members):
                state = self._key_lines[root] = self._resumed(state, info.members)
            while state.done < len(info.members):
                if time.perf_counter() > deadline:
                    return False
                chunk = info.members[state.done : state.done + KEY_LINE_CHUNK]
                for message in self.log.get_many(chunk):
                    state.add(message)
            if time.perf_counter() > deadline:
                return False
            if rank:  # bounded: MAX_KEY_LINES per topic
                state.ranking(self.embedder.idf, self.embedder.epoch, self.count)
        for root in [r for r in self._key_lines if r not in live]:
            del self._key_lines[root]
        return True

    def key_lines_ranked(self) -> bool:
        """Whether every topic's key lines are collected and ranked (else upkeep has work for
        the user's next pause)."""
        idf, epoch = self.embedder.idf, self.embedder.epoch
        for root in self.forest.live_roots():
            state = self._key_lines.get(root)
            members = self.forest.root(root).members
            if state is None or not state.continues(members) or state.done < len(members):
                return False
            if not state.ranked(idf, epoch):
                return False
        return True

    def _resumed(self, state: KeyLineState | None, members: list[int]) -> KeyLineState:
        """`state` without the members that left the topic, to go on from; a new one when
        that would cost more than collecting again (many left, or the list was reordered)."""
        try:
            if state is not None and state.resume(members, self.log.get_many, KEY_LINE_CHUNK * 4):
                return state
        except KeyError:  # a message deleted meanwhile: nothing to take back from
            pass
        return KeyLineState()

    def key_lines(self, root: int) -> list[KeyLine] | None:
        """The topic's key lines as last collected (None: not collected yet)."""
        state = self._key_lines.get(root)
        return state.lines if state is not None else None

    def select_key_lines(self, root: int, room: int, skip: str = "") -> list[KeyLine]:
        """`keylines.pick` over the topic's key lines, from a ranking kept until they or the
        IDF change (scoring a big topic's lines on every render took tens of milliseconds)."""
        state = self._key_lines.get(root)
        if state is None or not state.lines or room <= 0:
            return []
        return pick(state.ranking(self.embedder.idf, self.embedder.epoch, self.count), room, skip)

    # -- re-clustering (upkeep) ----------------------------------------------------------------
    @property
    def refine_pending(self) -> bool:
        return self.refiner.pending

    def refine(self, budget_seconds: float = 0.05, *, settle: bool = False) -> set[int]:
        """One bounded slice of re-clustering (see `recluster`); returns the changed topics.
        `settle`: the user is away, so even a few new exchanges are worth a round."""
        return self.refiner.step(self, budget_seconds, settle=settle)

    def move_unit(self, unit: Unit, source: int, target: int) -> bool:
        """Move one exchange between live topics; never the exchange that names its topic."""
        if source in unit.ids or not self.forest.is_root(target):
            return False
        for message_id in unit.ids:
            self.forest.move(message_id, target)
        self.index.remove(source, unit.terms, unit.files, unit.symbols, sum(unit.tokens))
        self._add_unit_features(target, unit)
        self._hand_over(source, target, unit.ids)
        return True

    def merge_topics(self, a: int, b: int) -> int:
        """Merge two topics; the larger survives (its id stays)."""
        return self._union(a, b)

    def split_topic(self, root: int, units: list[Unit]) -> int:
        """Split `units` off `root` into a new topic, which keeps `root`'s pinned and expanded
        state; returns its id. The part holding `root`'s own message stays `root`."""
        ids = [m for unit in units for m in unit.ids]
        new_root = self.forest.split(root, ids)  # refuses to take `root`'s own message
        for unit in units:
            self.index.remove(root, unit.terms, unit.files, unit.symbols, sum(unit.tokens))
            self._add_unit_features(new_root, unit)
        for flags in (self.pinned, self.expanded):
            if root in flags:
                flags.add(new_root)
        self._hand_over(root, new_root, tuple(ids))
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

    # -- deletion --------------------------------------------------------------------------
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

    def _rebuild_centroid(self, root: int) -> None:
        """The topic's centroid from its members again (after some left), with the IDF now."""
        self.index.discard(root)
        for message in self.log.get_many(self.forest.members(root)):
            features = self.embedder.features(message.content)
            self.index.add(root, features, message.tokens, message.timestamp)

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
        )

    def topics(self) -> list[TopicView]:
        return [self.topic(r) for r in self.forest.roots()]

    def title(self, root: int) -> str:
        """What a person would call the topic (`titles.py`): only stored state decides, so every
        window shows the same."""
        return self.titles.title(root)

    def _offline_title(self, job: SummaryJob) -> str:
        phrases: Counter[str] = Counter()
        state = self._key_lines.get(job.topic_id)
        if state is not None:
            phrases.update(state.phrases)
        for message in job.request.messages:
            phrases.update(message_phrases(message.content))
        return self.titles.offline(job.topic_id, phrases)

    def members(self, topic_id: int) -> list[Message]:
        return self.log.get_many(self.forest.members(self._root(topic_id)))

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

    # -- summaries -------------------------------------------------------------------------
    def set_fallback_summary(self, text: str | None) -> None:
        """The flat summary of everything graduated (renders where no topic fits use it)."""
        self.fallback_summary = text

    def is_dirty(self, root: int) -> bool:
        summary = self.summaries.get(root)
        return summary is None or summary.version != self.forest.version(root)

    def summary_jobs(
        self, target_tokens: int | None = None, *, force: bool = False, idle: bool = False
    ) -> list[SummaryJob]:
        """One job per dirty live topic: its previous summary plus members not yet covered.

        A topic waits until its not-yet-summarized messages reach `summary_batch_tokens` (render
        shows them verbatim meanwhile): summarizing after every message would pay for the
        previous summary again each time and, with a size-limited summarizer, wear it down.
        `idle` (the user paused) also takes topics with no summary yet once they hold half a
        batch: a first summary re-pays nothing. `force` takes every dirty topic (tests, the end
        of an evaluation).
        """
        jobs = []
        for root in self.forest.live_roots():
            if not self.is_dirty(root):
                continue
            summary = self.summaries.get(root)
            fresh = self.uncovered(root)
            if not fresh and summary:  # a merge of two summarized topics needs no model call
                summary.version = self.forest.version(root)
                continue
            if not force:  # an exchange that may still change topic is summarized later
                fresh = [m for m in fresh if self.refiner.settled(m)]
            pending = self.log.get_many(fresh)
            size = sum(m.tokens for m in pending)
            batch_size = self.config.summary_batch_tokens
            due = force or size >= batch_size or (idle and not summary and size >= batch_size // 2)
            if not due:
                continue
            batch: list[Message] = []
            size = 0
            for message in pending:
                if batch and size + message.tokens > MAX_JOB_TOKENS:
                    break
                batch.append(message)
                size += message.tokens
            request = SummaryRequest(
                messages=tuple(self._condensed(m) for m in batch),
                previous_summary=summary_body(summary.text) if summary else None,
                # never longer than half of what it summarizes
                target_tokens=min(
                    target_tokens or self.summary_target(),
                    max(MIN_SUMMARY_TOKENS, (size + (summary.tokens if summary else 0)) // 2),
                ),
            )
            jobs.append(
                SummaryJob(root, self.forest.version(root), request, tuple(m.id for m in batch))
            )
        return jobs

    def _condensed(self, message: Message) -> Message:
        """A long paste goes to the summarizer as its prose and the code lines that name
        things, not whole: the original stays in the log for recall and expand."""
        if message.tokens <= SUMMARY_MESSAGE_TOKENS:
            return message
        text = condense(message.content, SUMMARY_MESSAGE_TOKENS, self.count)
        return dataclasses.replace(message, content=text, tokens=self.count(text))

    def uncovered(self, root: int) -> list[int]:
        """The topic's members no summary covers yet, in member order.

        Remembered until the topic or its summary changes: a render meets every dirty topic,
        and scanning a big topic's members each time cost a millisecond per turn at 10k. After
        a change that took members out, added some at the end or added to what the summary
        covers (re-clustering, a graduation, a new summary of the same topic: here or in
        another window) only the remembered ones and the changed part of the list are looked
        at; at 100,000 messages a render after other windows' upkeep rescanned topic after
        topic of thousands of members."""
        summary = self.summaries.get(root)
        info = self.forest.root(root)
        members = info.members
        covered = summary.covered if summary else set()
        cached = self._uncovered.get(root)
        changes = None
        if cached is not None:
            if (
                cached.summary is summary
                and cached.covered == len(covered)
                and cached.version == info.version
            ):
                return cached.ids
            before = cached.summary.covered if cached.summary else set()
            # a summary's covered set only grows in place; a new one must hold the old one's
            if cached.summary is summary or before <= covered:
                changes = list_changes(cached.members, members)
        if cached is not None and changes is not None:
            gone, appended = changes
            ids = cached.ids
            if gone or len(covered) != cached.covered or cached.summary is not summary:
                left = set(gone)  # else the remembered ones all stand (a big topic's thousands)
                ids = [m for m in ids if m not in left and m not in covered]
            ids = ids + [m for m in appended if m not in covered]
        else:
            ids = [m for m in members if m not in covered]
        if len(self._uncovered) > 4 * self.config.max_topics + 64:
            self._uncovered.clear()
        self._uncovered[root] = Uncovered(info.version, summary, len(covered), list(members), ids)
        return ids

    def summary_target(self) -> int:
        """Tokens per topic summary: the topic share of the budget split across live topics."""
        topic_budget = self.config.history_budget - self.config.hot_budget
        live = max(1, len(self.forest.live_roots()))
        return max(60, min(400, SUMMARY_OVERSIZE * topic_budget // live))

    def apply_summary(self, job: SummaryJob, result: SummaryResult) -> bool:
        """Store a finished summary unless its topic changed meanwhile (then it stays dirty)."""
        spent = self.spend.setdefault(job.topic_id, Spend())
        spent.calls += 1
        spent.input_tokens += result.input_tokens
        spent.output_tokens += result.output_tokens
        if (
            not self.forest.is_root(job.topic_id)
            or self.forest.version(job.topic_id) != job.version
        ):
            return False
        if self.forest.root(job.topic_id).dropped:
            return False
        previous = self.summaries.get(job.topic_id)
        covered = (previous.covered if previous else set()) | set(job.message_ids)
        members = self.forest.members(job.topic_id)
        complete = covered.issuperset(members)
        text = result.text
        if not model_title(text):  # the offline title, stored with the summary: every window
            text = f"{TITLE_PREFIX} {self._offline_title(job)}\n{text}"  # shows the same one
        self.summaries[job.topic_id] = Summary(
            text=text,
            version=job.version if complete else -1,  # a partial batch keeps the topic dirty
            covered=covered,
            tokens=self.count(summary_body(text)),
            model=result.model,
        )
        for message_id in job.message_ids:
            self.pending_terms.pop(message_id, None)
        return True

    def dirty_topic_ids(self) -> list[int]:
        return [r for r in self.forest.live_roots() if self.is_dirty(r)]

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
