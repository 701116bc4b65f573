"""Union-find invariants under random operation sequences."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicforest.engine.errors import UnknownTopic
from topicforest.engine.forest import Forest

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add")),
        st.tuples(st.just("union"), st.integers(0, 200), st.integers(0, 200)),
        st.tuples(st.just("drop"), st.integers(0, 200)),
        st.tuples(st.just("restore"), st.integers(0, 200)),
        st.tuples(st.just("attach"), st.integers(0, 200)),
    ),
    max_size=120,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_invariants_hold_under_random_operations(sequence: list[tuple[object, ...]]) -> None:
    forest = Forest()
    items: list[int] = []
    dropped_members: dict[int, set[int]] = {}
    for op in sequence:
        kind = op[0]
        if kind == "add" or not items:
            items.append(len(items))
            forest.add(items[-1])
            continue
        pick = lambda i: items[int(i) % len(items)]  # noqa: E731
        if kind == "union":
            a, b = pick(op[1]), pick(op[2])
            if forest.root(forest.find(a)).dropped or forest.root(forest.find(b)).dropped:
                continue  # the window never merges a dropped topic
            before = forest.size(forest.find(a)) + (
                forest.size(forest.find(b)) if forest.find(a) != forest.find(b) else 0
            )
            root = forest.union(a, b)
            assert forest.size(root) == before
        elif kind == "attach":
            target = forest.find(pick(op[1]))
            if forest.root(target).dropped:
                continue  # nothing joins a dropped topic
            items.append(len(items))
            forest.attach(items[-1], target)
        elif kind == "drop":
            root = forest.find(pick(op[1]))
            forest.drop(root)
            dropped_members[root] = set(forest.members(root))
        elif kind == "restore":
            root = forest.find(pick(op[1]))
            was_dropped = forest.root(root).dropped
            forest.restore(root)
            if was_dropped:
                assert set(forest.members(root)) == dropped_members.pop(root)
    # every item belongs to exactly one root, find is idempotent, sizes add up
    roots = forest.roots()
    owners: dict[int, int] = {}
    for root in roots:
        for member in forest.members(root):
            assert member not in owners
            owners[member] = root
    assert set(owners) == set(items)
    for item in items:
        root = forest.find(item)
        assert forest.find(root) == root
        assert forest.find(item) == root == owners[item]
    assert sum(forest.size(r) for r in roots) == len(items)


def test_root_order_is_stable_and_union_keeps_earliest_position() -> None:
    forest = Forest()
    for i in range(6):
        forest.add(i)
    forest.union(4, 5)
    forest.union(5, 1)  # the merged topic takes the earliest position among its parts
    order = forest.roots()
    assert [forest.find(i) for i in (0, 1, 2, 3)] == [0, forest.find(4), 2, 3]
    assert order == [0, forest.find(1), 2, 3]
    forest.add(6)
    assert forest.roots()[-1] == 6


def test_version_bumps_on_every_membership_change() -> None:
    forest = Forest()
    forest.add(1)
    forest.add(2)
    v = forest.version(1)
    forest.attach(3, 1)
    assert forest.version(1) > v
    v = max(forest.version(1), forest.version(2))
    root = forest.union(1, 2)
    assert forest.version(root) > v


def test_drop_and_restore_keep_members() -> None:
    forest = Forest()
    for i in range(4):
        forest.add(i)
    root = forest.union(0, 1)
    members = forest.members(root)
    forest.drop(root)
    assert root not in forest.live_roots()
    assert root in forest.roots()
    forest.restore(root)
    assert forest.members(root) == members
    assert root in forest.live_roots()


def test_unknown_topic_is_a_clear_error() -> None:
    forest = Forest()
    forest.add(1)
    with pytest.raises(UnknownTopic, match="unknown topic 99"):
        forest.drop(99)


def test_snapshot_round_trip() -> None:
    forest = Forest()
    for i in range(10):
        forest.add(i)
    forest.union(0, 3)
    forest.union(3, 7)
    forest.drop(forest.find(5))
    copy = Forest.from_snapshot(forest.snapshot())
    assert copy.roots() == forest.roots()
    for r in forest.roots():
        assert copy.members(r) == forest.members(r)
        assert copy.version(r) == forest.version(r)
        assert copy.root(r).dropped == forest.root(r).dropped


@settings(max_examples=100, deadline=None)
@given(st.lists(ops, min_size=1, max_size=4))
def test_update_roots_follows_a_copy_changed_elsewhere(
    batches: list[list[tuple[object, ...]]],
) -> None:
    """Another process changes its forest in batches; after each, this copy takes the changed
    roots' new members only (`update_roots`) and must equal a fresh load of that forest."""
    writer, reader = Forest(), Forest()
    items: list[int] = []
    for batch in batches:
        before = {r: (info.version, len(info.members)) for r, info in writer._roots.items()}
        for op in batch:
            if op[0] == "union" and items:
                a, b = items[int(op[1]) % len(items)], items[int(op[2]) % len(items)]
                writer.union(a, b)
            elif op[0] == "attach" and items:
                target = writer.find(items[int(op[1]) % len(items)])
                items.append(len(items))
                writer.attach(items[-1], target)
            else:
                items.append(len(items))
                writer.add(items[-1])
        roots = {r: (i.order, i.version, i.dropped) for r, i in writer._roots.items()}
        grown = {}
        for r, info in writer._roots.items():
            if before.get(r, (None,))[0] != info.version:
                keep = reader.size(r) if reader.is_root(r) else 0
                grown[r] = (keep, info.members[keep:])
        reader.update_roots(roots, grown, writer._next_order)
        fresh = Forest.from_snapshot(writer.snapshot())
        assert reader.snapshot() == fresh.snapshot()
        assert all(reader.find(i) == fresh.find(i) for i in items)


def test_list_changes_finds_members_that_left_and_those_appended() -> None:
    from topicforest.engine.forest import list_changes

    before = list(range(1, 21))
    assert list_changes(before, before) == ([], [])
    assert list_changes(before, [*before, 30, 31]) == ([], [30, 31])
    moved_out = [m for m in before if m not in (5, 6, 17)]
    assert list_changes(before, [*moved_out, 40]) == ([5, 6, 17], [40])
    assert list_changes(before, before[:-2]) == ([19, 20], [])
    assert list_changes(before, []) == (before, [])
    swapped = [*before[:10], before[11], before[10], *before[12:]]
    assert list_changes(before, swapped) is None  # not how a member list changes
    # 2-7 moved out, then 3 back in, where it was: bisection lands past the first that left
    back = [1, 8, 3, 9, 10, 11, 12, 13]
    assert list_changes(list(range(1, 9)), back) in (None, ([2, 3, 4, 5, 6, 7], back[2:]))
