"""(De)serialization of a ContextWindow's state, row by row and only what changed.

`Mirror` remembers, per entity (root, centroid, summary, …), a cheap fingerprint of what the
database holds. `save` compares the window against it and writes only the differences, tagged
with the transaction's `rev`; `load` reads only rows with a `rev` newer than the last one this
process saw (everything when opening) and applies them to the window. Open and reload-after-
another-process-committed are the same code path.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from topicforest.engine.centroids import Centroid
from topicforest.engine.embedding import norm_sq
from topicforest.engine.forest import Forest
from topicforest.engine.messages import Message
from topicforest.engine.recall import RecallIndex
from topicforest.engine.window import ContextWindow, Spend, Summary
from topicforest.store.backend import Connection, Dialect

RootFp = tuple[int, int, bool, bool, bool, int]
CentroidFp = tuple[int, int, int, int, float, float]
SummaryFp = tuple[str, int, int, int, str]
SpendFp = tuple[int, int, int]

MESSAGE_COLUMNS = "id, thread_id, role, content, timestamp, tokens, cancelled"


def row_to_message(row: tuple[Any, ...]) -> Message:
    return Message(
        id=row[0],
        thread_id=row[1],
        role=row[2],
        content=row[3],
        timestamp=row[4],
        tokens=row[5],
        cancelled=bool(row[6]),
    )


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def reset_window(window: ContextWindow) -> None:
    """Empty `window` in place (same object, same log/config), as its constructor would."""
    fresh = ContextWindow(window.config, log=window.log, count=window.count, clock=window.clock)
    vars(window).update(vars(fresh))


class Mirror:
    """What this process knows the database holds; see the module docstring."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.rev = -1  # nothing loaded yet
        self.roots: dict[int, RootFp] = {}
        self.placement: dict[int, tuple[int, int]] = {}  # member id -> (root, position)
        self.centroids: dict[int, CentroidFp] = {}
        self.summaries: dict[int, SummaryFp] = {}
        self.spend: dict[int, SpendFp] = {}
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
        self.deletions = 0  # meta 'deletions' as last loaded or written
        self.appends = 0  # meta 'appends' (appends by any process) as last loaded or counted
        self.threads_changed = False  # a load brought thread changes (cleared by the reader)
        self.stale = False  # a commit this process made may be lost: the next load is whole

    # -- fingerprints (the same functions serve load and save) ------------------------------
    @staticmethod
    def root_fp(window: ContextWindow, root: int) -> RootFp:
        info = window.forest.root(root)
        return (
            info.order,
            info.version,
            info.dropped,
            root in window.pinned,
            root in window.expanded,
            len(info.members),
        )

    @staticmethod
    def centroid_fp(c: Centroid) -> CentroidFp:
        # Adding or merging always adds tokens; pruning always shrinks the term set.
        return (c.tokens, len(c.terms), len(c.files), len(c.symbols), c.first_time, c.last_time)

    @staticmethod
    def summary_fp(s: Summary) -> SummaryFp:
        return (s.text, s.version, len(s.covered), s.tokens, s.model)

    @staticmethod
    def spend_fp(s: Spend) -> SpendFp:
        return (s.calls, s.input_tokens, s.output_tokens)

    # -- load --------------------------------------------------------------------------------
    def load(self, conn: Connection, window: ContextWindow, *, full: bool = False) -> bool:
        """Bring `window` up to date with the database; returns whether anything changed."""
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
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
            reset_window(window)
        elif rev == self.rev:
            if not appended:
                return False
            self._load_hot(conn, window, -1)  # only messages were added: their hot zones
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
        new_idf = self._load_doc_freq(conn, window, meta, since)
        changed_roots = self._load_forest(conn, window, meta, since)
        self._load_centroids(conn, window, since, norms=not new_idf)
        self._load_summaries(conn, window, since)
        self._load_small_tables(conn, window)
        self._load_pending(conn, window, since)
        self._load_hot(conn, window, -1 if appended else since)
        self.fallback = window.fallback_summary = meta["fallback_summary"]
        forest = window.forest
        placement = self.placement
        recall = window.recall
        incremental = isinstance(recall, StoredRecall)  # else a full load
        planted = []  # graduated in another process: the recall index takes them in
        for root, kept in changed_roots.items():
            members = forest.root(root).members
            for pos in range(kept, len(members)):
                member = members[pos]
                if incremental and member not in placement:
                    planted.append(member)
                placement[member] = (root, pos)
        if isinstance(recall, StoredRecall):
            recall.planted_elsewhere(planted)
        else:  # the recall index is built when a render first needs it
            window.recall = StoredRecall(self._recall_loader(conn, window, self.dialect))
        self.rev, self.appends = rev, appends
        return True

    def _load_doc_freq(
        self, conn: Connection, window: ContextWindow, meta: dict[str, Any], since: int
    ) -> bool:
        """Document frequencies and the IDF they gave at the writer's last epoch, exactly.

        IDF is persisted rather than recomputed: the engine refreshes it only every few hundred
        documents, so recomputing would change titles and clustering after a reload. Between
        those refreshes another window's commits only add counts and brand-new terms: they are
        applied in place, without a new epoch (which would recompute every centroid's norm).
        Returns whether the weights changed (a new epoch).
        """
        n_docs, generation = int(meta["n_docs"]), int(meta["df_generation"])
        embedder = window.embedder
        if generation != self.df_generation or since < 0:  # pruned: deletions, reload all
            self.df = dict(conn.execute("SELECT term, df FROM doc_freq"))
            self.idf = dict(conn.execute("SELECT term, idf FROM doc_freq"))
        elif n_docs != self.n_docs:
            rows = conn.execute("SELECT term, df, idf FROM doc_freq WHERE rev > ?", (since,))
            same_epoch = int(meta["docs_at_epoch"]) == self.docs_at_epoch
            for term, count, weight in rows:
                same_epoch = same_epoch and self.idf.get(term, weight) == weight
                self.df[term] = embedder.df[term] = count
                self.idf[term] = embedder._idf[term] = weight
            if same_epoch:  # counts and brand-new terms only: no weight of a centroid changed
                self.n_docs = embedder.n_docs = n_docs
                return False  # (the changed centroids' norms are computed as they load)
        else:
            return False
        df, idf = self.df, self.idf
        self.n_docs, self.df_generation = n_docs, generation
        self.docs_at_epoch = int(meta["docs_at_epoch"])
        embedder.df, embedder._idf = dict(df), dict(idf)
        embedder.n_docs, embedder._docs_at_epoch = n_docs, self.docs_at_epoch
        embedder.epoch += 1  # cached norms and pair products are recomputed from the new IDF
        self.epoch = embedder.epoch
        return True

    def _load_forest(
        self, conn: Connection, window: ContextWindow, meta: dict[str, Any], since: int
    ) -> dict[int, int]:
        """Roots and members; returns the changed roots, each with how many of its first members
        were already in place (their positions did not move)."""
        rows = conn.execute(
            "SELECT id, ord, version, size, dropped, pinned, expanded, rev FROM roots"
        ).fetchall()
        forest = window.forest
        self.next_order = int(meta["next_order"])
        ids = {row[0] for row in rows}
        changed = [row[0] for row in rows if row[7] > since or not forest.is_root(row[0])]
        if not changed and ids == set(self.roots) and self.next_order == forest._next_order:
            return {}
        if since < 0:
            members: dict[int, list[int]] = {root: [] for root in changed}
            for root, member_ids in self.dialect.member_lists(conn):
                members[root] = member_ids
            snapshot = {
                "roots": [
                    {"id": root, "order": order, "version": version, "dropped": bool(dropped),
                     "members": members[root]}
                    for root, order, version, _size, dropped, _p, _e, _rev in rows
                ],
                "next_order": self.next_order,
            }  # fmt: skip
            window.forest = Forest.from_snapshot(snapshot)
            kept = dict.fromkeys(changed, 0)
        else:  # member lists only grow at their end: read what follows the members known here
            grown = {root: self._grown(conn, forest, root) for root in changed}
            roots = {row[0]: (row[1], row[2], bool(row[4])) for row in rows}
            forest.update_roots(roots, grown, self.next_order)
            kept = {root: keep for root, (keep, _) in grown.items()}
        window.pinned = {row[0] for row in rows if row[5]}
        window.expanded = {row[0] for row in rows if row[6]}
        self.roots = {row[0]: self.root_fp(window, row[0]) for row in rows}
        return kept

    @staticmethod
    def _grown(conn: Connection, forest: Forest, root: int) -> tuple[int, list[int]]:
        """How many of `root`'s members here the stored list starts with, and the rest of it."""
        keep = forest.size(root) if forest.is_root(root) else 0
        if keep:
            last = conn.execute(
                "SELECT id FROM messages WHERE root_id = ? AND pos = ?", (root, keep - 1)
            ).fetchone()
            if last is None or last[0] != forest.root(root).members[keep - 1]:
                keep = 0  # not the same list: read it whole
        tail = conn.execute(
            "SELECT id FROM messages WHERE root_id = ? AND pos >= ? ORDER BY pos", (root, keep)
        )
        return keep, [row[0] for row in tail]

    def _load_centroids(
        self, conn: Connection, window: ContextWindow, since: int, *, norms: bool
    ) -> None:
        """Changed centroids; their norms come later from the index's own epoch refresh when
        the IDF changed too (`norms` False), so an open does not pay for them."""
        index = window.index
        idf = window.embedder.idf
        for root in [r for r in index.centroids if not window.forest.is_root(r)]:
            index.discard(root)
            self.centroids.pop(root, None)
        for root, terms, files, symbols, tokens, first, last in conn.execute(
            "SELECT root_id, terms, files, symbols, tokens, first_time, last_time FROM centroids"
            " WHERE rev > ?",
            (since,),
        ):
            index.discard(root)  # also forgets cached pair products that involved it
            counts: Counter[str] = Counter(json.loads(terms))
            centroid = Centroid(
                terms=counts,
                norm_sq=norm_sq(counts, idf) if norms else 0.0,
                files=Counter(json.loads(files)),
                symbols=Counter(json.loads(symbols)),
                tokens=tokens,
                first_time=first,
                last_time=last,
            )
            index.centroids[root] = centroid
            self.centroids[root] = self.centroid_fp(centroid)

    def _load_summaries(self, conn: Connection, window: ContextWindow, since: int) -> None:
        stored = {r[0] for r in conn.execute("SELECT root_id FROM summaries")}
        for root in [r for r in window.summaries if r not in stored]:
            del window.summaries[root]
            self.summaries.pop(root, None)
        for root, text, version, covered, tokens, model in conn.execute(
            "SELECT root_id, text, version, covered, tokens, model FROM summaries WHERE rev > ?",
            (since,),
        ):
            summary = Summary(text, version, set(json.loads(covered)), tokens, model)
            window.summaries[root] = summary
            self.summaries[root] = self.summary_fp(summary)

    def _load_small_tables(self, conn: Connection, window: ContextWindow) -> None:
        window.spend = {
            root: Spend(calls, inp, out)
            for root, calls, inp, out in conn.execute(
                "SELECT root_id, calls, input_tokens, output_tokens FROM spend"
            )
        }
        self.spend = {root: self.spend_fp(s) for root, s in window.spend.items()}
        window._last_planted = dict(
            conn.execute(
                "SELECT thread_id, last_planted FROM threads WHERE last_planted IS NOT NULL"
            ).fetchall()
        )
        self.last_planted = dict(window._last_planted)

    def _load_pending(self, conn: Connection, window: ContextWindow, since: int) -> None:
        pending = window.pending_terms
        if since >= 0:
            stored = {r[0] for r in conn.execute("SELECT message_id FROM pending")}
            for message_id in [m for m in pending if m not in stored]:
                del pending[message_id]
        for message_id, terms in conn.execute(
            "SELECT message_id, terms FROM pending WHERE rev > ?", (since,)
        ):
            pending[message_id] = Counter(json.loads(terms))
        self.pending = set(pending)

    def _load_hot(self, conn: Connection, window: ContextWindow, since: int) -> None:
        """Hot zones are the messages no topic holds yet, per thread in id order.

        After any message change they are read again whole, through the `messages_hot` index:
        a few dozen rows. (Finding the threads that changed first cost more: a merge re-places
        thousands of messages, and their threads' rows had to be scanned for the hot ones.)"""
        if (
            since >= 0
            and not conn.execute(
                "SELECT 1 FROM messages WHERE rev > ? LIMIT 1", (since,)
            ).fetchone()
        ):
            return
        window.hot.clear()
        window.hot_tokens.clear()
        # no ORDER BY id in SQL: SQLite would then walk the whole table in id order to skip a
        # sort of a few dozen rows
        rows = conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE root_id IS NULL")
        for row in sorted(rows, key=lambda row: row[0]):  # id order: threads as on a fresh open
            window.push_hot(row_to_message(row))

    @staticmethod
    def _recall_loader(
        conn: Connection, window: ContextWindow, dialect: Dialect
    ) -> Callable[[StoredRecall, list[int] | None], None]:
        def load(recall: StoredRecall, ids: list[int] | None) -> None:
            known, forest = window.embedder.df, window.forest
            query = "SELECT id, terms, tokens FROM messages WHERE root_id IS NOT NULL"
            if ids is None:
                rows = conn.execute(query + " ORDER BY id")
            else:
                rows = conn.execute(
                    query + f" AND id {dialect.ids_clause} ORDER BY id", (dialect.ids_param(ids),)
                )
            for message_id, terms, tokens in rows:
                if message_id not in forest:  # graduated after our last reload: comes later
                    continue
                words = [t for t in terms.split(" ") if t in known] if terms else []
                RecallIndex.add(recall, message_id, words, tokens)

        return load

    # -- save --------------------------------------------------------------------------------
    def save(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        """Write what changed in `window` since the last load/save; returns whether any did."""
        wrote = self._save_forest(conn, window, rev)
        wrote |= self._save_centroids(conn, window, rev)
        wrote |= self._save_doc_freq(conn, window, rev)
        wrote |= self._save_summaries(conn, window, rev)
        wrote |= self._save_spend(conn, window, rev)
        wrote |= self._save_pending(conn, window, rev)
        wrote |= self._save_threads(conn, window, rev)
        wrote |= self._save_meta(conn, window)
        return wrote

    def _save_forest(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        forest = window.forest
        current = forest.roots()
        changed: list[tuple[int, int]] = []  # (root, how many of its first members are placed)
        for root in current:
            fp, saved = self.root_fp(window, root), self.roots.get(root)
            if saved != fp:
                self.roots[root] = fp
                changed.append((root, self._placed_prefix(forest.root(root).members, root, saved)))
        gone = set(self.roots) - set(current)
        if not changed and not gone:
            return False
        conn.executemany(
            "INSERT INTO roots (id, ord, version, dropped, pinned, expanded, size, rev)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            + _replace("id", "ord", "version", "dropped", "pinned", "expanded", "size", "rev"),
            [(root, *self.roots[root], rev) for root, _ in changed],
        )
        conn.executemany("DELETE FROM roots WHERE id = ?", [(root,) for root in gone])
        for root in gone:
            del self.roots[root]
        moves, planted = [], []
        for root, placed in changed:
            members = forest.root(root).members
            for pos in range(placed, len(members)):
                member = members[pos]
                place = self.placement.get(member)
                if place != (root, pos):
                    self.placement[member] = (root, pos)
                    moves.append((root, pos, rev, member))
                    if place is None:  # newly graduated: keep its terms for the recall index
                        terms = window.pending_terms.get(member)
                        planted.append((" ".join(terms) if terms else None, member))
        conn.executemany("UPDATE messages SET root_id = ?, pos = ?, rev = ? WHERE id = ?", moves)
        conn.executemany("UPDATE messages SET terms = ? WHERE id = ?", planted)
        return True

    def _placed_prefix(self, members: list[int], root: int, saved: RootFp | None) -> int:
        """How many of `root`'s first members are stored in place already. A topic's member list
        only ever grows at its end (attach, union), so a graduation into a 1,000-message topic
        writes its new members without rechecking the rest; the last one saved is checked."""
        size = saved[-1] if saved else 0
        if 0 < size <= len(members) and self.placement.get(members[size - 1]) == (root, size - 1):
            return size
        return 0

    def _save_centroids(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        centroids = window.index.centroids
        rows = []
        for root, c in centroids.items():
            fp = self.centroid_fp(c)
            if self.centroids.get(root) != fp:
                self.centroids[root] = fp
                rows.append(
                    (root, _dumps(c.terms), _dumps(c.files), _dumps(c.symbols), c.tokens,
                     c.first_time, c.last_time, rev)
                )  # fmt: skip
        gone = [(root,) for root in self.centroids if root not in centroids]
        conn.executemany(
            "INSERT INTO centroids (root_id, terms, files, symbols, tokens, first_time,"
            " last_time, rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            + _replace(
                "root_id", "terms", "files", "symbols", "tokens", "first_time", "last_time", "rev"
            ),
            rows,
        )
        conn.executemany("DELETE FROM centroids WHERE root_id = ?", gone)
        for (root,) in gone:
            del self.centroids[root]
        return bool(rows or gone)

    def _save_doc_freq(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        embedder = window.embedder
        if embedder.n_docs == self.n_docs and embedder.epoch == self.epoch:
            return False
        df, idf = embedder.df, embedder.idf
        old_df, old_idf = self.df, self.idf
        touched = embedder.take_changes()  # a message's terms, unless a new epoch reweighed all
        terms = df if touched is None else [t for t in touched if t in df]
        changed = [
            (t, df[t], idf.get(t, 0.0), rev)
            for t in terms
            if old_df.get(t) != df[t] or old_idf.get(t) != idf.get(t, 0.0)
        ]
        conn.executemany(
            "INSERT INTO doc_freq (term, df, idf, rev) VALUES (?, ?, ?, ?)"
            + _replace("term", "df", "idf", "rev"),
            changed,
        )
        for t, count, weight, _ in changed:
            old_df[t], old_idf[t] = count, weight
        gone = [(t,) for t in old_df if t not in df] if touched is None else []
        if gone:  # the vocabulary was pruned: readers must reload it whole
            conn.executemany("DELETE FROM doc_freq WHERE term = ?", gone)
            self.df_generation += 1
            _set_meta(conn, "df_generation", self.df_generation)
            for (t,) in gone:
                del old_df[t], old_idf[t]
        self.n_docs, self.epoch = embedder.n_docs, embedder.epoch
        self.docs_at_epoch = embedder._docs_at_epoch
        _set_meta(conn, "n_docs", self.n_docs)
        _set_meta(conn, "docs_at_epoch", self.docs_at_epoch)
        return True

    def _save_summaries(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        rows = []
        for root, s in window.summaries.items():
            fp = self.summary_fp(s)
            if self.summaries.get(root) != fp:
                self.summaries[root] = fp
                rows.append(
                    (root, s.text, s.version, _dumps(sorted(s.covered)), s.tokens, s.model, rev)
                )
        gone = [(root,) for root in self.summaries if root not in window.summaries]
        conn.executemany(
            "INSERT INTO summaries (root_id, text, version, covered, tokens, model, rev)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            + _replace("root_id", "text", "version", "covered", "tokens", "model", "rev"),
            rows,
        )
        conn.executemany("DELETE FROM summaries WHERE root_id = ?", gone)
        for (root,) in gone:
            del self.summaries[root]
        return bool(rows or gone)

    def _save_spend(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        rows = []
        for root, s in window.spend.items():
            fp = self.spend_fp(s)
            if self.spend.get(root) != fp:
                self.spend[root] = fp
                rows.append((root, *fp, rev))
        gone = [(root,) for root in self.spend if root not in window.spend]
        conn.executemany(
            "INSERT INTO spend (root_id, calls, input_tokens, output_tokens, rev)"
            " VALUES (?, ?, ?, ?, ?)"
            + _replace("root_id", "calls", "input_tokens", "output_tokens", "rev"),
            rows,
        )
        conn.executemany("DELETE FROM spend WHERE root_id = ?", gone)
        for (root,) in gone:
            del self.spend[root]
        return bool(rows or gone)

    def _save_pending(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        pending = window.pending_terms
        if len(pending) == len(self.pending) and pending.keys() == self.pending:
            return False
        added = [(m, _dumps(pending[m]), rev) for m in pending.keys() - self.pending]
        gone = [(m,) for m in self.pending - pending.keys()]
        conn.executemany(
            "INSERT INTO pending (message_id, terms, rev) VALUES (?, ?, ?)"
            + _replace("message_id", "terms", "rev"),
            added,
        )
        conn.executemany("DELETE FROM pending WHERE message_id = ?", gone)
        self.pending = set(pending)
        return True

    def _save_threads(self, conn: Connection, window: ContextWindow, rev: int) -> bool:
        changed = [
            (m, rev, t) for t, m in window._last_planted.items() if self.last_planted.get(t) != m
        ]
        conn.executemany(
            "UPDATE threads SET last_planted = ?, rev = ? WHERE thread_id = ?", changed
        )
        self.last_planted = dict(window._last_planted)
        return bool(changed)

    def _save_meta(self, conn: Connection, window: ContextWindow) -> bool:
        wrote = False
        next_order = window.forest._next_order
        if next_order != self.next_order:
            self.next_order = next_order
            _set_meta(conn, "next_order", next_order)
            wrote = True
        if window.fallback_summary != self.fallback:
            self.fallback = window.fallback_summary
            _set_meta(conn, "fallback_summary", self.fallback)
            wrote = True
        return wrote


class StoredRecall(RecallIndex):
    """The engine's recall index, built from stored terms on first use (not on the open path)."""

    def __init__(self, loader: Callable[[StoredRecall, list[int] | None], None]) -> None:
        super().__init__()
        self._loader: Callable[[StoredRecall, list[int] | None], None] | None = loader
        self._load_fn = loader

    def ensure(self) -> None:
        if self._loader is not None:
            loader, self._loader = self._loader, None
            loader(self, None)

    def planted_elsewhere(self, message_ids: list[int]) -> None:
        """Another process graduated these messages: index them if the index is built."""
        if self._loader is None and message_ids:
            self._load_fn(self, message_ids)

    def add(self, message_id: int, terms: Iterable[str], tokens: int) -> None:
        self.ensure()
        super().add(message_id, terms, tokens)

    def forget(self, message_ids: set[int]) -> None:
        if self._loader is None:  # not built yet: it will be built without them
            super().forget(message_ids)

    def prune(self, known: Mapping[str, int]) -> None:
        self.ensure()
        super().prune(known)

    def search(
        self, query: Mapping[str, int], idf: Mapping[str, float], limit: int = 50
    ) -> list[tuple[int, float]]:
        self.ensure()
        return super().search(query, idf, limit)


def _set_meta(conn: Connection, key: str, value: object) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)" + _replace("key", "value"), (key, value)
    )


def _replace(key: str, *columns: str) -> str:
    """The upsert tail that replaces a whole row (`INSERT OR REPLACE`, in both dialects)."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns)
    return f" ON CONFLICT ({key}) DO UPDATE SET {updates}"
