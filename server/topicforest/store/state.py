"""(De)serialization of a ContextWindow's state, row by row and only what changed.

`Mirror` speaks to the window only through the engine's state contract (`engine/state.py`): it
remembers, per entity (root, centroid, summary, …), a cheap fingerprint of what the database
holds; `save` compares the window's `state()` against it and writes only the differences, tagged
with the transaction's `rev`; `load` reads only rows with a `rev` newer than the last one this
process saw (everything when opening) and hands them to the window as one `StateDelta`. Open and
reload-after-another-process-committed are the same code path. The columns of the record tables
and of `roots` are the fields `PERSISTED` lists (`records.py`); the recall index over the stored
terms is `stored_recall.py`'s.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from topicforest.engine.messages import Message
from topicforest.engine.state import (
    ForestDelta,
    StateDelta,
    VocabularyDelta,
    WindowState,
)
from topicforest.engine.window import ContextWindow
from topicforest.store.backend import Connection, Dialect
from topicforest.store.records import (
    CENTROIDS,
    MESSAGE_COLUMNS,
    RECORDS,
    ROOT_COLUMNS,
    SIZE_AT,
    SPEND,
    SUMMARIES,
    TOPIC_FIELDS,
    Fingerprint,
    RecordTable,
    dumps,
    row_to_message,
    set_meta,
    topic_fingerprint,
    upsert,
)
from topicforest.store.stored_recall import StoredRecall, recall_loader


class Mirror:
    """What this process knows the database holds; see the module docstring."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.rev = -1  # nothing loaded yet
        self.roots: dict[int, Fingerprint] = {}
        self.placement: dict[int, tuple[int, int]] = {}  # member id -> (root, position)
        self.records: dict[str, dict[int, Fingerprint]] = {t.entity: {} for t in RECORDS}
        self.pending: set[int] = set()
        self.last_planted: dict[str, int] = {}
        self.df: dict[str, int] = {}
        self.idf: dict[str, float] = {}
        self.n_docs = 0
        self.epoch = -1  # the embedder epoch (process-local) the IDF above belongs to
        self.docs_at_epoch = 0
        self.df_generation = 0
        self.next_order = 0
        self.fallback: str | None = None
        self.recall: StoredRecall | None = None  # the recall index this mirror gave the window
        self.deletions = 0  # meta 'deletions' as last loaded or written
        self.appends = 0  # meta 'appends' (appends by any process) as last loaded or counted
        self.threads_changed = False  # a load brought thread changes (cleared by the reader)
        self.appended_to: set[str] = set()  # threads a load brought new messages to (ditto)
        self.stale = False  # a commit this process made may be lost: the next load is whole

    # -- load --------------------------------------------------------------------------------
    def load(self, conn: Connection, window: ContextWindow, *, full: bool = False) -> bool:
        """Bring `window` up to date with the database; returns whether anything changed."""
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        # the hot messages the window holds (ours, or loaded before); on the first load, all
        known = None if self.rev < 0 else {m.id for zone in window.hot.values() for m in zone}
        appended_to = self.appended_to
        rev = int(meta["rev"])
        deletions = int(meta.get("deletions") or 0)
        appends = int(meta.get("appends") or 0)  # appends tag their rows with an older rev
        appended = appends != self.appends
        if deletions != self.deletions:  # another window deleted a thread: reload it all
            full = True
        if rev < self.rev or appends < self.appends:  # commits we saw were lost (a database
            full = True  # crash before a deferred commit was flushed): rebuild from what is
        if full or self.rev < 0 or self.stale:
            self.__init__(self.dialect)  # type: ignore[misc]
            self.appended_to = appended_to  # not yet taken by the reader
            window.reset()
        elif rev == self.rev:
            if not appended:
                return False
            hot = self._load_hot(conn, -1)  # only messages were added: their hot zones
            window.apply(StateDelta(hot=hot, fallback_summary=window.state().fallback_summary))
            self._note_appended(hot, known)
            self.threads_changed = True
            self.appends = appends
            return True
        since = self.rev
        self.deletions = deletions
        self.threads_changed |= (
            since < 0
            or appended
            or conn.execute("SELECT 1 FROM threads WHERE rev > ? LIMIT 1", (since,)).fetchone()
            is not None
        )
        before = window.state()
        forest = self._load_forest(conn, before, meta, since)
        summaries, summaries_gone = self._load_changed(conn, SUMMARIES, before.summaries, since)
        spend, spend_gone = self._load_changed(conn, SPEND, before.spend, since)
        pending, pending_gone = self._load_pending(conn, before, since)
        recall = None
        if self.recall is None:  # built later: by upkeep in slices, or by the first search
            recall = self.recall = StoredRecall(recall_loader(conn, window, self.dialect))
        delta = StateDelta(
            vocabulary=self._load_doc_freq(conn, meta, since),
            forest=forest,
            centroids=self._load_records(conn, CENTROIDS, since),
            summaries=summaries,
            summaries_gone=summaries_gone,
            spend=spend,
            spend_gone=spend_gone,
            last_planted=dict(
                conn.execute(
                    "SELECT thread_id, last_planted FROM threads WHERE last_planted IS NOT NULL"
                ).fetchall()
            ),
            pending_terms=pending,
            pending_gone=pending_gone,
            hot=self._load_hot(conn, -1 if appended else since),
            fallback_summary=meta["fallback_summary"],
            recall=recall,
        )
        window.apply(delta)
        self._note_appended(delta.hot, known)
        after = window.state()
        self._remember(after, delta)
        if forest is not None:
            self._place(after, forest, incremental=recall is None)
        self.rev, self.appends = rev, appends
        return True

    def _note_appended(self, hot: Sequence[Message] | None, known: set[int] | None) -> None:
        """The threads of loaded messages the window did not hold: another window's appends
        (a new message is hot until this load at least, so the hot zones show them all)."""
        if known is not None:
            self.appended_to.update(m.thread_id for m in hot or () if m.id not in known)

    def _remember(self, state: WindowState, delta: StateDelta) -> None:
        """Fingerprints of what `delta` brought, as the window now holds it."""
        if delta.vocabulary is not None and delta.vocabulary.whole:
            self.epoch = state.epoch
        if delta.forest is not None:
            self.roots = {root: topic_fingerprint(t) for root, t in state.topics.items()}
        centroids, summaries, spend = (self.records[t.entity] for t in RECORDS)
        for root in [r for r in centroids if r not in state.centroids]:
            del centroids[root]  # discarded with its topic
        for root in delta.centroids:
            centroids[root] = CENTROIDS.fingerprint(state.centroids[root])
        for root in delta.summaries_gone:
            summaries.pop(root, None)
        for root in delta.summaries:
            summaries[root] = SUMMARIES.fingerprint(state.summaries[root])
        for root in delta.spend_gone:
            spend.pop(root, None)
        for root in delta.spend:
            spend[root] = SPEND.fingerprint(state.spend[root])
        self.last_planted = dict(state.last_planted)
        self.pending = set(state.pending_terms)
        self.fallback = state.fallback_summary

    def _place(self, state: WindowState, forest: ForestDelta, *, incremental: bool) -> None:
        """Where the changed topics' members are stored; members that graduated in another
        process go to the recall index (if it is built)."""
        placement = self.placement
        planted = []
        for root, (kept, _) in forest.grown.items():
            members = state.topics[root].members
            for pos in range(kept, len(members)):
                member = members[pos]
                if incremental and member not in placement:
                    planted.append(member)
                placement[member] = (root, pos)
        if incremental and self.recall is not None:
            self.recall.planted_elsewhere(planted)

    def _load_doc_freq(
        self, conn: Connection, meta: dict[str, Any], since: int
    ) -> VocabularyDelta | None:
        """Document frequencies and the IDF they gave at the writer's last epoch, exactly.

        IDF is persisted rather than recomputed: the engine refreshes it only every few hundred
        documents, so recomputing would change titles and clustering after a reload. Between
        those refreshes another window's commits only add counts and brand-new terms: they are
        applied in place, without a new epoch (which would recompute every centroid's norm).
        """
        n_docs, generation = int(meta["n_docs"]), int(meta["df_generation"])
        docs_at_epoch = int(meta["docs_at_epoch"])
        if generation != self.df_generation or since < 0:  # pruned: deletions, reload all
            self.df = dict(conn.execute("SELECT term, df FROM doc_freq"))
            self.idf = dict(conn.execute("SELECT term, idf FROM doc_freq"))
        elif n_docs != self.n_docs:
            rows = conn.execute("SELECT term, df, idf FROM doc_freq WHERE rev > ?", (since,))
            same_epoch = docs_at_epoch == self.docs_at_epoch
            df: dict[str, int] = {}
            idf: dict[str, float] = {}
            for term, count, weight in rows:
                same_epoch = same_epoch and self.idf.get(term, weight) == weight
                self.df[term] = df[term] = count
                self.idf[term] = idf[term] = weight
            if same_epoch:  # counts and brand-new terms only: no weight of a centroid changed
                self.n_docs = n_docs  # (the changed centroids' norms are computed as they load)
                return VocabularyDelta(df, idf, n_docs, self.docs_at_epoch, whole=False)
        else:
            return None
        self.n_docs, self.df_generation, self.docs_at_epoch = n_docs, generation, docs_at_epoch
        return VocabularyDelta(self.df, self.idf, n_docs, docs_at_epoch, whole=True)

    def _load_forest(
        self, conn: Connection, before: WindowState, meta: dict[str, Any], since: int
    ) -> ForestDelta | None:
        """Roots and members (None: unchanged). Per changed root, how many of its first members
        are already in place (their positions did not move) and the ones that follow."""
        rows = conn.execute(f"SELECT {', '.join(ROOT_COLUMNS)} FROM roots").fetchall()
        topics = {row[0]: dict(zip(TOPIC_FIELDS, row[1:-1], strict=True)) for row in rows}
        self.next_order = int(meta["next_order"])
        changed = [row[0] for row in rows if row[-1] > since or row[0] not in before.topics]
        if (
            not changed
            and topics.keys() == self.roots.keys()
            and self.next_order == before.next_order
        ):
            return None
        if since < 0:
            members: dict[int, list[int]] = {root: [] for root in changed}
            for root, member_ids in self.dialect.member_lists(conn):
                members[root] = member_ids
            grown = {root: (0, members[root]) for root in changed}
        else:
            sizes = {root: int(topics[root]["members"]) for root in changed}
            grown = self._moved(conn, before, sizes, since)
        return ForestDelta(
            roots={
                root: (int(t["order"]), int(t["version"]), bool(t["dropped"]))
                for root, t in topics.items()
            },
            grown=grown,
            next_order=self.next_order,
            pinned={root for root, t in topics.items() if t["pinned"]},
            expanded={root for root, t in topics.items() if t["expanded"]},
        )

    @staticmethod
    def _moved(
        conn: Connection, before: WindowState, sizes: dict[int, int], since: int
    ) -> dict[int, tuple[int, list[int]]]:
        """Per changed root (with its stored size), how many of its first members here the
        stored list starts with, and the rest of it.

        Only the rows placed since `since` are read (one statement for every root): the others
        sit where this window knows them. Lists grow at their end, and when re-clustering moves
        an exchange out of the middle of a list only the members after it are placed again (a
        list was read whole then: thousands of ids at 100,000 messages, in every window)."""
        placed: dict[int, dict[int, int]] = {root: {} for root in sizes}
        rows = conn.execute(
            "SELECT root_id, pos, id FROM messages WHERE rev > ? AND root_id IS NOT NULL", (since,)
        )
        for root, pos, member in rows:
            if root in placed:
                placed[root][pos] = member
        grown = {}
        for root, size in sizes.items():
            topic = before.topics.get(root)
            known = topic.members if topic is not None else ()
            moved = placed[root]
            keep = min(min(moved, default=size), size, len(known))
            tail = [
                moved.get(pos, known[pos] if pos < len(known) else -1) for pos in range(keep, size)
            ]
            if -1 in tail:  # not as this window knew it: read it whole
                whole = conn.execute(
                    "SELECT id FROM messages WHERE root_id = ? ORDER BY pos", (root,)
                )
                keep, tail = 0, [row[0] for row in whole]
            grown[root] = (keep, tail)
        return grown

    @classmethod
    def _load_changed(
        cls, conn: Connection, table: RecordTable, known: Mapping[int, object], since: int
    ) -> tuple[dict[int, Any], list[int]]:
        """The records stored since `since`, and those of `known` no longer stored."""
        stored = {row[0] for row in conn.execute(f"SELECT root_id FROM {table.entity}")}
        return cls._load_records(conn, table, since), [r for r in known if r not in stored]

    @staticmethod
    def _load_records(conn: Connection, table: RecordTable, since: int) -> dict[int, Any]:
        rows = conn.execute(table.select + " WHERE rev > ?", (since,))
        return {row[0]: table.loaded(row) for row in rows}

    @staticmethod
    def _load_pending(
        conn: Connection, before: WindowState, since: int
    ) -> tuple[dict[int, Counter[str]], list[int]]:
        gone = []
        if since >= 0:
            stored = {r[0] for r in conn.execute("SELECT message_id FROM pending")}
            gone = [m for m in before.pending_terms if m not in stored]
        rows = conn.execute("SELECT message_id, terms FROM pending WHERE rev > ?", (since,))
        return {message_id: Counter(json.loads(terms)) for message_id, terms in rows}, gone

    @staticmethod
    def _load_hot(conn: Connection, since: int) -> list[Message] | None:
        """Hot zones are the messages no topic holds yet, per thread in id order (None: no
        message changed since `since`).

        After any message change they are read again whole, through the `messages_hot` index:
        a few dozen rows. (Finding the threads that changed first cost more: a merge re-places
        thousands of messages, and their threads' rows had to be scanned for the hot ones.)"""
        if (
            since >= 0
            and not conn.execute(
                "SELECT 1 FROM messages WHERE rev > ? LIMIT 1", (since,)
            ).fetchone()
        ):
            return None
        # no ORDER BY id in SQL: SQLite would then walk the whole table in id order to skip a
        # sort of a few dozen rows
        rows = conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE root_id IS NULL")
        # id order: threads as on a fresh open
        return [row_to_message(row) for row in sorted(rows, key=lambda row: row[0])]

    # -- save --------------------------------------------------------------------------------
    def save(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        """Write what changed in `window` since the last load/save; returns whether any did."""
        state = window.state()
        wrote = self._save_forest(conn, state, rev)
        wrote |= self._save_records(conn, CENTROIDS, state.centroids, rev)
        wrote |= self._save_doc_freq(conn, window, state, rev)
        wrote |= self._save_records(conn, SUMMARIES, state.summaries, rev)
        wrote |= self._save_records(conn, SPEND, state.spend, rev)
        wrote |= self._save_pending(conn, state, rev)
        wrote |= self._save_threads(conn, state, rev)
        wrote |= self._save_meta(conn, state)
        return wrote

    def _save_forest(self, conn: Connection, state: WindowState, rev: int) -> bool:
        topics = state.topics
        changed: list[tuple[int, int]] = []  # (root, how many of its first members are placed)
        for root, topic in topics.items():
            fp, saved = topic_fingerprint(topic), self.roots.get(root)
            if saved != fp:
                self.roots[root] = fp
                changed.append((root, self._placed_prefix(topic.members, root, saved)))
        gone = [root for root in self.roots if root not in topics]
        if not changed and not gone:
            return False
        conn.executemany(
            f"INSERT INTO roots ({', '.join(ROOT_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(ROOT_COLUMNS))})" + upsert(*ROOT_COLUMNS),
            [(root, *self.roots[root], rev) for root, _ in changed],
        )
        conn.executemany("DELETE FROM roots WHERE id = ?", [(root,) for root in gone])
        for root in gone:
            del self.roots[root]
        moves, planted = [], []
        for root, placed in changed:
            members = topics[root].members
            for pos in range(placed, len(members)):
                member = members[pos]
                place = self.placement.get(member)
                if place != (root, pos):
                    self.placement[member] = (root, pos)
                    moves.append((root, pos, rev, member))
                    if place is None:  # newly graduated: keep its terms for the recall index
                        terms = state.pending_terms.get(member)
                        planted.append((" ".join(terms) if terms else None, member))
        conn.executemany("UPDATE messages SET root_id = ?, pos = ?, rev = ? WHERE id = ?", moves)
        conn.executemany("UPDATE messages SET terms = ? WHERE id = ?", planted)
        return True

    def _placed_prefix(self, members: Sequence[int], root: int, saved: Fingerprint | None) -> int:
        """How many of `root`'s first members are stored in place already. A topic's member list
        only ever grows at its end (attach, union), so a graduation into a 1,000-message topic
        writes its new members without rechecking the rest; the last one saved is checked."""
        size = saved[SIZE_AT] if saved else 0
        assert isinstance(size, int)
        if 0 < size <= len(members) and self.placement.get(members[size - 1]) == (root, size - 1):
            return size
        return 0

    def _save_records(
        self, conn: Connection, table: RecordTable, records: Mapping[int, object], rev: int
    ) -> bool:
        saved = self.records[table.entity]
        rows = []
        for root, record in records.items():
            fp = table.fingerprint(record)
            if saved.get(root) != fp:
                saved[root] = fp
                rows.append(table.row(root, record, rev))
        gone = [(root,) for root in saved if root not in records]
        if rows:
            conn.executemany(table.insert, rows)
        if gone:
            conn.executemany(table.delete, gone)
            for (root,) in gone:
                del saved[root]
        return bool(rows or gone)

    def _save_doc_freq(
        self, conn: Connection, window: ContextWindow, state: WindowState, rev: int
    ) -> bool:
        if state.n_docs == self.n_docs and state.epoch == self.epoch:
            return False
        df, idf = state.df, state.idf
        old_df, old_idf = self.df, self.idf
        touched = window.take_vocabulary_changes()  # a message's terms, unless a new epoch
        terms = df if touched is None else [t for t in touched if t in df]
        changed = [
            (t, df[t], idf.get(t, 0.0), rev)
            for t in terms
            if old_df.get(t) != df[t] or old_idf.get(t) != idf.get(t, 0.0)
        ]
        conn.executemany(
            "INSERT INTO doc_freq (term, df, idf, rev) VALUES (?, ?, ?, ?)"
            + upsert("term", "df", "idf", "rev"),
            changed,
        )
        for t, count, weight, _ in changed:
            old_df[t], old_idf[t] = count, weight
        gone = [(t,) for t in old_df if t not in df] if touched is None else []
        if gone:  # the vocabulary was pruned: readers must reload it whole
            conn.executemany("DELETE FROM doc_freq WHERE term = ?", gone)
            self.df_generation += 1
            set_meta(conn, "df_generation", self.df_generation)
            for (t,) in gone:
                del old_df[t], old_idf[t]
        self.n_docs, self.epoch = state.n_docs, state.epoch
        self.docs_at_epoch = state.docs_at_epoch
        set_meta(conn, "n_docs", self.n_docs)
        set_meta(conn, "docs_at_epoch", self.docs_at_epoch)
        return True

    def _save_pending(self, conn: Connection, state: WindowState, rev: int) -> bool:
        pending = state.pending_terms
        if len(pending) == len(self.pending) and pending.keys() == self.pending:
            return False
        added = [(m, dumps(pending[m]), rev) for m in pending.keys() - self.pending]
        gone = [(m,) for m in self.pending - pending.keys()]
        conn.executemany(
            "INSERT INTO pending (message_id, terms, rev) VALUES (?, ?, ?)"
            + upsert("message_id", "terms", "rev"),
            added,
        )
        conn.executemany("DELETE FROM pending WHERE message_id = ?", gone)
        self.pending = set(pending)
        return True

    def _save_threads(self, conn: Connection, state: WindowState, rev: int) -> bool:
        changed = [
            (m, rev, t) for t, m in state.last_planted.items() if self.last_planted.get(t) != m
        ]
        conn.executemany(
            "UPDATE threads SET last_planted = ?, rev = ? WHERE thread_id = ?", changed
        )
        self.last_planted = dict(state.last_planted)
        return bool(changed)

    def _save_meta(self, conn: Connection, state: WindowState) -> bool:
        wrote = False
        if state.next_order != self.next_order:
            self.next_order = state.next_order
            set_meta(conn, "next_order", state.next_order)
            wrote = True
        if state.fallback_summary != self.fallback:
            self.fallback = state.fallback_summary
            set_meta(conn, "fallback_summary", self.fallback)
            wrote = True
        return wrote
