"""The engine's message and attachment logs on the store: text stays in the database, not in RAM;
a bounded cache keeps recent reads (messages never change once stored)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from topicforest.attachments import AttachmentRef, SentAttachment
from topicforest.engine.messages import Message
from topicforest.store.records import MESSAGE_COLUMNS, row_to_message

if TYPE_CHECKING:
    from topicforest.store.store import Store

TITLE_CHARS = 80  # a thread's first message makes its title


class SqliteMessageLog:
    """The engine's MessageLog on the store (named for its first backend): message text stays
    in the database, not in RAM."""

    CACHE_SIZE = 4096  # messages never change once stored, so recent reads can be kept

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cache: OrderedDict[int, Message] = OrderedDict()

    def next_id(self) -> int:
        store = self._store
        with store.appending():  # joins the caller's transaction (SQLite: the id stays reserved)
            return store.backend.new_message_id()

    def add(self, message: Message) -> None:
        store = self._store
        with store.appending() as rev:
            conn = store.conn
            conn.execute(
                "INSERT INTO messages (id, thread_id, role, content, timestamp, tokens, cancelled,"
                " rev) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (message.id, message.thread_id, message.role, message.content,
                 message.timestamp, message.tokens, int(message.cancelled), rev),
            )  # fmt: skip
            title = " ".join(message.content.split())[:TITLE_CHARS]
            conn.execute(
                "INSERT INTO threads (thread_id, title, first_time, last_time, message_count,"
                " owner, rev) VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET"
                " last_time = CASE WHEN excluded.last_time > threads.last_time"
                " THEN excluded.last_time ELSE threads.last_time END,"
                " message_count = threads.message_count + 1, rev = excluded.rev,"
                " title = CASE WHEN threads.title = '' THEN excluded.title ELSE threads.title END",
                (message.thread_id, title if message.role == "user" else "",
                 message.timestamp, message.timestamp, store.user, rev),
            )  # fmt: skip
            store.touch()

    def remove(self, message_ids: Iterable[int]) -> None:
        """Delete messages (and their threads' rows once empty; attachments are the memory's)."""
        store = self._store
        ids = _ids(message_ids)
        where, param = _in_ids(store, ids)
        with store.transaction() as rev:
            conn = store.conn
            threads = [
                row[0]
                for row in conn.execute(f"SELECT DISTINCT thread_id FROM messages WHERE id {where}",
                                        (param,))
            ]  # fmt: skip
            conn.execute(f"DELETE FROM messages WHERE id {where}", (param,))
            for thread in threads:
                count, last = conn.execute(
                    "SELECT count(*), max(timestamp) FROM messages WHERE thread_id = ?", (thread,)
                ).fetchone()
                if count:
                    conn.execute(
                        "UPDATE threads SET message_count = ?, last_time = ?, rev = ?"
                        " WHERE thread_id = ?",
                        (count, last, rev, thread),
                    )
                else:
                    conn.execute("DELETE FROM threads WHERE thread_id = ?", (thread,))
                    store.owned_threads.discard(thread)  # its id is free for anyone again
            store.touch()
        with store.lock:
            for message_id in ids:
                self._cache.pop(message_id, None)
                store.mirror.placement.pop(message_id, None)

    def keep(self, message: Message) -> None:
        """Cache a message this process holds already (appended here, or read with a hot zone
        another window appended to): a render that recalls it later need not read it."""
        with self._store.lock:
            self._cache[message.id] = message
            self._trim()

    def get(self, message_id: int) -> Message:
        return self.get_many([message_id])[0]

    def get_many(self, message_ids: Iterable[int]) -> list[Message]:
        with self._store.lock:  # the cache is shared with worker threads
            return self._get_many(list(message_ids))

    def _get_many(self, ids: list[int]) -> list[Message]:
        cache = self._cache
        dialect = self._store.backend.dialect
        missing = [i for i in ids if i not in cache]
        if missing:
            rows = self._store.rows(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id {dialect.ids_clause}",
                (dialect.ids_param(missing),),
            )
            for row in rows:
                cache[row[0]] = row_to_message(row)
        try:
            found = [cache[i] for i in ids]
        except KeyError as exc:
            raise KeyError(f"message {exc.args[0]} is not in the store") from None
        for i in ids:
            cache.move_to_end(i)
        self._trim()
        return found

    def _trim(self) -> None:
        while len(self._cache) > self.CACHE_SIZE:
            self._cache.popitem(last=False)

    def __len__(self) -> int:
        return self._store.message_count()


def _ids(message_ids: Iterable[int]) -> list[int]:
    return sorted(set(message_ids))


def _in_ids(store: Store, ids: list[int]) -> tuple[str, object]:
    """`WHERE id <clause>` and its one parameter, in the store's dialect."""
    dialect = store.backend.dialect
    return dialect.ids_clause, dialect.ids_param(ids)


class SqliteAttachmentLog:
    """The memory's AttachmentLog on SQLite: references and sent text, beside the messages."""

    COLUMNS = "kind, path, start_line, end_line, language, sha256, tokens, truncated"

    def __init__(self, store: Store) -> None:
        self._store = store

    def add(self, message_id: int, sent: Sequence[SentAttachment]) -> None:
        if not sent:
            return
        store = self._store
        with store.appending() as rev:
            store.conn.executemany(
                f"INSERT INTO attachments (message_id, position, {self.COLUMNS}, text, rev)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(message_id, position, *_ref_row(s.ref), s.text, rev)
                 for position, s in enumerate(sent)],
            )  # fmt: skip
            store.touch()

    def refs(self, message_ids: Iterable[int]) -> dict[int, list[AttachmentRef]]:
        where, param = _in_ids(self._store, _ids(message_ids))
        rows = self._store.rows(
            f"SELECT message_id, {self.COLUMNS} FROM attachments WHERE message_id {where}"
            " ORDER BY message_id, position",
            (param,),
        )
        out: dict[int, list[AttachmentRef]] = {}
        for row in rows:
            out.setdefault(row[0], []).append(_row_ref(row[1:]))
        return out

    def sent(self, message_id: int) -> list[SentAttachment]:
        rows = self._store.rows(
            f"SELECT {self.COLUMNS}, text FROM attachments WHERE message_id = ? ORDER BY position",
            (message_id,),
        )
        return [SentAttachment(_row_ref(row[:-1]), row[-1]) for row in rows]

    def remove(self, message_ids: Iterable[int]) -> None:
        where, param = _in_ids(self._store, _ids(message_ids))
        with self._store.transaction():
            self._store.conn.execute(f"DELETE FROM attachments WHERE message_id {where}", (param,))
            self._store.touch()


def _ref_row(ref: AttachmentRef) -> tuple[object, ...]:
    start, end = ref.range if ref.range else (None, None)
    truncated = int(ref.truncated)
    return (ref.kind, ref.path, start, end, ref.language, ref.sha256, ref.tokens, truncated)


def _row_ref(row: Sequence[Any]) -> AttachmentRef:
    kind, path, start, end, language, sha256, tokens, truncated = row
    span = (start, end) if start is not None and end is not None else None
    return AttachmentRef(kind, path, span, language, sha256, tokens, bool(truncated))
