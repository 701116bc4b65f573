"""How a window's records become rows: the record tables' columns (the fields `PERSISTED`
lists), their encoding, and the cheap fingerprints `Mirror` compares to write only changes."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from topicforest.engine.messages import Message
from topicforest.engine.state import PERSISTED, TopicState, field_types
from topicforest.store.backend import Connection

Fingerprint = tuple[object, ...]

MESSAGE_COLUMNS = "id, thread_id, role, content, timestamp, tokens, cancelled"
RENAMED_COLUMNS = {"order": "ord", "members": "size"}  # TopicState fields in `roots`


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


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def set_meta(conn: Connection, key: str, value: object) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?)" + upsert("key", "value"), (key, value)
    )


def upsert(key: str, *columns: str) -> str:
    """The upsert tail that replaces a whole row (`INSERT OR REPLACE`, in both dialects)."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns)
    return f" ON CONFLICT ({key}) DO UPDATE SET {updates}"


_COLLECTIONS = ("Counter[", "set[", "Sequence[", "list[", "dict[")  # field types


def fingerprinter(record: type, fields: tuple[str, ...]) -> Callable[[Any], Fingerprint]:
    """A record's cheap fingerprint: its fields by value, its collections by size (each grows
    or shrinks with a change that matters, or changes along with a number beside it: a
    centroid's terms with its tokens, a summary's `covered` with its version)."""
    types = field_types(record)
    sized = [i for i, name in enumerate(fields) if types[name].startswith(_COLLECTIONS)]
    values = attrgetter(*fields)

    def fingerprint(r: object) -> Fingerprint:  # runs ~50 times a save: no generator
        found = list(values(r))
        for i in sized:
            found[i] = len(found[i])
        return tuple(found)

    return fingerprint


def _encode(value: object) -> object:
    if isinstance(value, (set, frozenset)):
        return dumps(sorted(value))
    return dumps(value) if isinstance(value, (dict, list, tuple)) else value


_DECODERS: dict[str, Callable[[Any], object]] = {
    "Counter[str]": lambda text: Counter(json.loads(text)),
    "set[int]": lambda text: set(json.loads(text)),
    **dict.fromkeys(("str", "int", "float", "bool", "str | None"), lambda value: value),
}


class RecordTable:
    """A table of records per topic root (centroids, summaries, spend): one column per field
    `PERSISTED` lists for it, plus `root_id` and `rev`."""

    def __init__(self, entity: str) -> None:
        spec = PERSISTED[entity]
        assert spec.record is not None and len(spec.fields) > 1
        types = field_types(spec.record)
        self.entity, self.record, self.fields = entity, spec.record, spec.fields
        self.values = attrgetter(*spec.fields)
        self.decoders = [_DECODERS[types[name]] for name in spec.fields]  # KeyError: add one
        self.fingerprint = fingerprinter(spec.record, spec.fields)
        columns = ("root_id", *spec.fields, "rev")
        self.insert = (
            f"INSERT INTO {entity} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            + upsert(*columns)
        )
        self.select = f"SELECT root_id, {', '.join(spec.fields)} FROM {entity}"
        self.delete = f"DELETE FROM {entity} WHERE root_id = ?"

    def row(self, root: int, record: object, rev: int) -> tuple[object, ...]:
        return (root, *map(_encode, self.values(record)), rev)

    def loaded(self, row: Sequence[Any]) -> Any:
        """The record a row holds (its derived fields at their defaults)."""
        values = (decode(value) for decode, value in zip(self.decoders, row[1:], strict=True))
        return self.record(**dict(zip(self.fields, values, strict=True)))


CENTROIDS, SUMMARIES, SPEND = RECORDS = tuple(
    RecordTable(entity) for entity in ("centroids", "summaries", "spend")
)
# A topic's `roots` row is its fingerprint (members: their count, the column `size`), its id, rev.
TOPIC_FIELDS = PERSISTED["topics"].fields
topic_fingerprint = fingerprinter(TopicState, TOPIC_FIELDS)
ROOT_COLUMNS = ("id", *(RENAMED_COLUMNS.get(f, f) for f in TOPIC_FIELDS), "rev")
SIZE_AT = TOPIC_FIELDS.index("members")  # where a topic's fingerprint holds its member count
