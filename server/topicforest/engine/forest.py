"""Union-find over message ids: each root is a topic.

Path compression and union by size keep `find` near O(1). Roots keep a stable order (the order in
which their oldest member arrived). Per root the forest keeps only ids and counts: members, size,
a version that bumps whenever membership changes (so a summary made from old inputs is detectable)
and the dropped flag. Message text and term vectors live elsewhere.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping
from dataclasses import dataclass, field

from topicforest.engine.errors import UnknownTopic


@dataclass(slots=True)
class Root:
    order: int  # position in the stable root order
    members: list[int] = field(default_factory=list)
    version: int = 0
    dropped: bool = False


class Forest:
    def __init__(self) -> None:
        self._parent: dict[int, int] = {}
        self._roots: dict[int, Root] = {}
        self._next_order = 0
        # Roots whose members all point straight at them. Only a union breaks this (the smaller
        # topic's members still point at its old root), so `move` flattens a topic once, not on
        # every move: re-clustering moves many members and each flatten is O(topic size).
        self._flat: set[int] = set()
        self.changes = 0  # bumps with every change to any topic (what a whole-forest cache keys on)

    # -- structure -------------------------------------------------------------------------
    def add(self, item: int) -> int:
        """Make `item` a singleton root; returns it."""
        if item in self._parent:
            raise ValueError(f"message {item} is already in the forest")
        self._parent[item] = item
        self._roots[item] = Root(order=self._next_order, members=[item])
        self._flat.add(item)
        self._next_order += 1
        self.changes += 1
        return item

    def find(self, item: int) -> int:
        parent = self._parent
        root = item
        while parent[root] != root:
            root = parent[root]
        while parent[item] != root:  # path compression
            parent[item], item = root, parent[item]
        return root

    def union(self, a: int, b: int) -> int:
        """Merge the topics of `a` and `b`; the larger root survives and keeps the earlier order."""
        ra = a if a in self._roots else self.find(a)  # a root's own message may have moved
        rb = b if b in self._roots else self.find(b)
        if ra == rb:
            return ra
        big, small = (ra, rb) if self.size(ra) >= self.size(rb) else (rb, ra)
        big_root, small_root = self._roots[big], self._roots.pop(small)
        self._flat.discard(big)  # the small topic's members still point at `small`
        self._flat.discard(small)
        self._parent[small] = big
        big_root.order = min(big_root.order, small_root.order)
        big_root.members.extend(small_root.members)
        big_root.version += small_root.version + 1
        big_root.dropped = big_root.dropped and small_root.dropped
        self.changes += 1
        return big

    def attach(self, item: int, root: int) -> int:
        """Add a new `item` straight into the topic `root`."""
        self._parent[item] = root
        r = self._roots[root]
        r.members.append(item)
        r.version += 1
        self.changes += 1
        return root

    def move(self, item: int, to_root: int) -> None:
        """Move a member into another topic (re-clustering). A topic's own id stays with it:
        the member whose id names a topic never moves. An emptied topic is removed."""
        source = self.find(item)
        if item == source or to_root == source:
            raise ValueError(f"message {item} cannot move from topic {source} to {to_root}")
        info = self._roots[source]
        info.members.remove(item)
        self._flatten(source)  # once per topic (see `_flat`); it stays flat after this move
        target = self._roots[to_root]
        target.members.append(item)
        self._parent[item] = to_root
        info.version += 1
        target.version += 1
        self.changes += 1
        if not info.members:
            del self._roots[source]
            self._flat.discard(source)

    def split(self, root: int, items: list[int]) -> int:
        """Move `items` (members of `root`, not `root` itself) into a new topic named after the
        oldest of them; it takes the next place in the stable order and `root`'s dropped flag."""
        taken = set(items)
        info = self._roots[root]
        if root in taken or not taken <= set(info.members):
            raise ValueError(f"cannot split {sorted(taken)} off topic {root}")
        self._flatten(root)
        new_root = min(taken)
        kept = [m for m in info.members if m not in taken]
        moved = [m for m in info.members if m in taken]
        info.members[:] = kept
        info.version += 1
        self._roots[new_root] = Root(order=self._next_order, members=moved, dropped=info.dropped)
        self._next_order += 1
        for member in moved:
            self._parent[member] = new_root
        self._flat.add(new_root)
        self.changes += 1
        return new_root

    def remove(self, items: set[int]) -> dict[int, int | None]:
        """Take `items` out of the forest (their thread was deleted); returns, per topic that
        lost members, its id now: the same, the oldest remaining member's when the topic's own
        message went (it keeps its place in the order and its flags), or None when it emptied."""
        by_root: dict[int, set[int]] = {}
        for item in items:
            if item in self._parent:
                by_root.setdefault(self.find(item), set()).add(item)
        renamed: dict[int, int | None] = {}
        for root, gone in by_root.items():
            self._flatten(root)
            info = self._roots[root]
            info.members = [m for m in info.members if m not in gone]
            info.version += 1
            for member in gone:
                del self._parent[member]
            new: int | None = root
            if root in gone:
                del self._roots[root]
                self._flat.discard(root)
                new = min(info.members) if info.members else None
                if new is not None:
                    self._roots[new] = info
                    for member in info.members:
                        self._parent[member] = new
                    self._flat.add(new)
            renamed[root] = new
        self.changes += 1
        return renamed

    def _flatten(self, root: int) -> None:
        """Point every member straight at its root, so moving one never reroutes the others."""
        if root in self._flat:
            return
        for member in self._roots[root].members:
            self._parent[member] = root
        self._flat.add(root)

    def update_roots(
        self,
        roots: Mapping[int, tuple[int, int, bool]],
        grown: Mapping[int, tuple[int, list[int]]],
        next_order: int,
    ) -> None:
        """Bring the forest up to a stored copy's state in place (another process changed it).

        `roots`: every root's (order, version, dropped); roots not in it are gone (merged away).
        `grown`: per changed root, how many of its current members it keeps and the members
        that follow them. Member lists only grow at their end, so that is usually all of them
        but the new ones; the members of a merged-away root are among those of its survivor.
        """
        self._flat.clear()  # another process's merges: flatten again before the next move
        for root in [r for r in self._roots if r not in roots]:
            del self._roots[root]
        for root, (order, version, dropped) in roots.items():
            info = self._roots.get(root)
            if info is None:
                info = self._roots[root] = Root(order=order)
            info.order, info.version, info.dropped = order, version, dropped
            if root in grown:
                keep, tail = grown[root]
                del info.members[keep:]
                info.members.extend(tail)
                for member in tail:
                    self._parent[member] = root
        self._next_order = next_order
        self.changes += 1

    # -- queries ---------------------------------------------------------------------------
    def __contains__(self, item: object) -> bool:
        return item in self._parent

    def __len__(self) -> int:
        return len(self._parent)

    def is_root(self, item: int) -> bool:
        return item in self._roots

    def root(self, topic_id: int) -> Root:
        try:
            return self._roots[topic_id]
        except KeyError:
            raise UnknownTopic(f"unknown topic {topic_id}") from None

    def size(self, root: int) -> int:
        return len(self._roots[root].members)

    def members(self, root: int) -> list[int]:
        return list(self.root(root).members)

    def version(self, root: int) -> int:
        return self.root(root).version

    def roots(self, *, include_dropped: bool = True) -> list[int]:
        """Roots in stable order."""
        items = sorted(self._roots.items(), key=lambda kv: kv[1].order)
        return [r for r, info in items if include_dropped or not info.dropped]

    def live_roots(self) -> list[int]:
        return self.roots(include_dropped=False)

    def __iter__(self) -> Iterator[int]:
        return iter(self._parent)

    def items(self) -> ItemsView[int, Root]:
        """(root, its `Root`) pairs, in no particular order; read only."""
        return self._roots.items()

    @property
    def next_order(self) -> int:
        """The place in the stable order the next new topic takes."""
        return self._next_order

    # -- user actions ----------------------------------------------------------------------
    def drop(self, root: int) -> None:
        self.root(root).dropped = True
        self.changes += 1

    def restore(self, root: int) -> None:
        self.root(root).dropped = False
        self.changes += 1

    # -- persistence -----------------------------------------------------------------------
    def snapshot(self) -> dict[str, object]:
        return {
            "roots": [
                {
                    "id": r,
                    "order": info.order,
                    "members": list(info.members),
                    "version": info.version,
                    "dropped": info.dropped,
                }
                for r, info in self._roots.items()
            ],
            "next_order": self._next_order,
        }

    @classmethod
    def from_snapshot(cls, data: dict[str, object]) -> Forest:
        forest = cls()
        roots = data["roots"]
        assert isinstance(roots, list)
        forest.update_roots(
            {int(e["id"]): (int(e["order"]), int(e["version"]), bool(e["dropped"])) for e in roots},
            {int(e["id"]): (0, [int(m) for m in e["members"]]) for e in roots},
            int(str(data["next_order"])),
        )
        return forest


def list_changes(before: list[int], after: list[int]) -> tuple[list[int], list[int]] | None:
    """The members that left a topic's list and those appended to it, from `before` to `after`;
    None if `after` is not `before` less some members plus some at its end (member lists only
    change so: re-clustering moves an exchange out, graduations and merges add at the end).

    The lists agree up to the first member that left, found by bisection (checked whole, in C:
    a member moved out and back in can defeat it), and only the part after it is compared in
    Python: a big topic that lost a recent exchange costs little."""
    low, high = 0, min(len(before), len(after))
    while low < high:  # the first position where they differ
        middle = (low + high) // 2
        if before[middle] == after[middle]:
            low = middle + 1
        else:
            high = middle
    if (before if low == len(before) else before[:low]) != after[:low]:
        return None
    rest = set(after[low:])
    kept = [m for m in before[low:] if m in rest]
    if after[low : low + len(kept)] != kept:
        return None
    return [m for m in before[low:] if m not in rest], after[low + len(kept) :]
