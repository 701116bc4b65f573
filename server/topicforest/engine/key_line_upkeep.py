"""Key lines kept up to date in upkeep, for renders with no query (a mixin of `ContextWindow`;
what a key line is and how they are ranked and picked: `keylines`)."""

from __future__ import annotations

import time
from collections.abc import Set as AbstractSet

from topicforest.engine.embedding import Embedder
from topicforest.engine.forest import Forest
from topicforest.engine.keylines import KeyLine, KeyLineState
from topicforest.engine.messages import MessageLog
from topicforest.engine.tokens import TokenCounter

KEY_LINE_CHUNK = 16  # messages read per step while collecting a topic's key lines


class KeyLineUpkeep:
    """Per topic, its key lines as collected so far (`_key_lines`)."""

    count: TokenCounter
    log: MessageLog
    forest: Forest
    embedder: Embedder
    _key_lines: dict[int, KeyLineState]

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

    def select_key_lines(
        self, root: int, room: int, skip: str = "", said: AbstractSet[str] = frozenset()
    ) -> list[KeyLine]:
        """`keylines.pick` over the topic's key lines, from a ranking kept until they or the
        IDF change (scoring a big topic's lines on every render took tens of milliseconds),
        the pick itself kept until the ranking or its arguments change."""
        state = self._key_lines.get(root)
        if state is None or not state.lines or room <= 0:
            return []
        ranking = state.ranking(self.embedder.idf, self.embedder.epoch, self.count)
        return state.pick(ranking, room, skip, said)
