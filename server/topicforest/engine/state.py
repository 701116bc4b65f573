"""The engine's persistent state: what a store keeps so that a window comes back the same.

A store speaks to a `ContextWindow` only through this contract:

- `window.state()`: a `WindowState`, a read-only view of the persisted state. It holds the
  window's own objects, not copies (a store diffs it after every change, on the chat path), so
  it is valid until the window changes next and must not be mutated.
- `window.apply(delta)`: brings the window up to a stored copy (`StateDelta`: what changed there).
- `window.reset()`: empties the window, as its constructor left it (before a whole reload).

`PERSISTED` is the one list of persisted fields. A new one is an entry there (and a column in
the store's schema); tests/store/test_state_contract.py round-trips every entry through both
stores and fails when one side misses it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from topicforest.engine.centroids import Centroid

if TYPE_CHECKING:
    from topicforest.engine.messages import Message
    from topicforest.engine.recall import RecallIndex


@dataclass(slots=True)
class Summary:
    text: str
    version: int  # the topic version it was made from
    covered: set[int]  # member ids it summarizes
    tokens: int
    model: str

    def before(self, messages: Sequence[Message]) -> int:
        """How many of `messages` (in conversation order) came before every message this
        summary covers: they joined the topic after it was made, and its story starts with
        them (`SummaryRequest.earlier`)."""
        if not messages or any(c < messages[0].id for c in self.covered):
            return 0  # the usual case, found at the first ids (the least of 10,000 took 0.2 ms)
        first = min(self.covered, default=0)
        return sum(1 for m in messages if m.id < first)


@dataclass(slots=True)
class Spend:
    """What summarizing a topic has cost so far."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class TopicState(NamedTuple):  # a tuple: a view makes one per topic, after every change
    """A topic as persisted: its place in the stable order, version, flags and members."""

    order: int
    version: int
    dropped: bool
    pinned: bool
    expanded: bool
    members: Sequence[int]  # in a view: the forest's own list (member lists grow at their end)


@dataclass(slots=True)  # not frozen: a store makes one after every change (read only anyway)
class WindowState:
    """A read-only view of a window's persisted state (see the module docstring)."""

    topics: Mapping[int, TopicState]  # every root, dropped ones too
    centroids: Mapping[int, Centroid]  # per root
    summaries: Mapping[int, Summary]  # per root
    spend: Mapping[int, Spend]  # per root
    pending_terms: Mapping[int, Counter[str]]  # per member no summary covers yet: its terms
    last_planted: Mapping[str, int]  # per thread: its newest message in a topic
    df: Mapping[str, int]  # document frequency per vocabulary term
    idf: Mapping[str, float]  # the IDF of the current epoch (persisted: see Embedder.restore)
    n_docs: int
    docs_at_epoch: int  # documents when the current IDF was computed
    next_order: int  # the stable order's next place
    fallback_summary: str | None  # the flat summary render falls back to
    epoch: int  # process-local: bumps whenever the IDF changes (not persisted)
    planted: Container[int]  # the message ids in topics (not persisted: the topics hold them)


@dataclass(frozen=True, slots=True)
class Persisted:
    """One entry of `PERSISTED`: a `WindowState` attribute. `record`: the type of its values
    when they are records, and `fields`, the fields of it a store keeps (the others are
    derived from them); None: a plain value or a mapping of plain values."""

    record: type | None = None
    fields: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()  # fields of `record` not kept, each computed from the rest


PERSISTED: Mapping[str, Persisted] = {
    "topics": Persisted(
        TopicState, ("order", "version", "dropped", "pinned", "expanded", "members")
    ),
    "centroids": Persisted(
        Centroid,
        ("terms", "files", "symbols", "tokens", "first_time", "last_time"),
        derived=("norm_sq",),  # from the terms and the IDF
    ),
    "summaries": Persisted(Summary, ("text", "version", "covered", "tokens", "model")),
    "spend": Persisted(Spend, ("calls", "input_tokens", "output_tokens")),
    "pending_terms": Persisted(),
    "last_planted": Persisted(),
    "df": Persisted(),
    "idf": Persisted(),
    "n_docs": Persisted(),
    "docs_at_epoch": Persisted(),
    "next_order": Persisted(),
    "fallback_summary": Persisted(),
}
NOT_PERSISTED = ("epoch", "planted")  # WindowState attributes a store does not keep


def field_types(record: type) -> dict[str, str]:
    """A record type's fields (a dataclass's or a NamedTuple's) and their annotations, as
    written (a NamedTuple keeps them as `ForwardRef`s)."""
    return {
        name: str(getattr(kind, "__forward_arg__", kind))
        for name, kind in record.__annotations__.items()
    }


@dataclass(frozen=True, slots=True)
class VocabularyDelta:
    """Document frequencies and IDF from a stored copy. `whole`: they replace the window's
    (a new epoch: every weight may have changed); else these terms changed or are new within
    the current epoch (no weight of a known term changed)."""

    df: Mapping[str, int]
    idf: Mapping[str, float]
    n_docs: int
    docs_at_epoch: int
    whole: bool


@dataclass(frozen=True, slots=True)
class ForestDelta:
    """The topics of a stored copy: every root's (order, version, dropped) (roots not in it
    are gone), per changed root how many of its members here it keeps and the members that
    follow them, and the flags."""

    roots: Mapping[int, tuple[int, int, bool]]
    grown: Mapping[int, tuple[int, list[int]]]
    next_order: int
    pinned: set[int]
    expanded: set[int]


@dataclass(frozen=True, slots=True)
class StateDelta:
    """What changed in a stored copy since the window last matched it; `window.apply` takes
    it. None: that part did not change. The window owns the objects it is given."""

    vocabulary: VocabularyDelta | None = None
    forest: ForestDelta | None = None
    centroids: Mapping[int, Centroid] = field(default_factory=dict)  # changed (norms: the window)
    summaries: Mapping[int, Summary] = field(default_factory=dict)  # changed or new
    summaries_gone: Sequence[int] = ()
    spend: Mapping[int, Spend] = field(default_factory=dict)  # changed or new
    spend_gone: Sequence[int] = ()
    last_planted: Mapping[str, int] | None = None  # all of it
    pending_terms: Mapping[int, Counter[str]] = field(default_factory=dict)  # new
    pending_gone: Sequence[int] = ()
    hot: Sequence[Message] | None = None  # every message no topic holds, in id order
    fallback_summary: str | None = None
    recall: RecallIndex | None = None  # a recall index to use from now on
