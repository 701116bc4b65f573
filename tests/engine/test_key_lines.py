"""Key lines follow re-clustering without collecting a topic again from its start."""

from __future__ import annotations

import math

from topicforest.engine import ContextWindow, Message, WindowConfig
from topicforest.engine.keylines import (
    KeyLineState,
    Ranking,
    key_lines,
    pick,
    rank,
    states_a_value,
)
from topicforest.engine.tokens import estimate_tokens

from .helpers import TOPICS, CountingLog, exchange, message


def evenly_ranked(state: KeyLineState) -> Ranking:
    """The state's lines ranked with every term equally rare."""
    return rank(state.lines, {t: 2.0 for line in state.lines for t in line.terms}, estimate_tokens)


def collected(messages: list[Message]) -> KeyLineState:
    state = KeyLineState()
    for each in messages:
        state.add(each)
    return state


def test_members_that_left_are_taken_back_out() -> None:
    window = ContextWindow(WindowConfig(history_budget=1024))
    for i in range(4):
        for topic in TOPICS:
            for role, text in zip(("user", "assistant"), exchange(topic, i), strict=True):
                window.append("main", role, text)
    messages = window.log.get_many(range(1, 25))
    state = collected(messages)
    members = [m.id for m in messages if m.id % 3] + [25, 26]  # some left, two arrived
    read: list[int] = []

    def get_many(ids: list[int]) -> list[Message]:
        read.extend(ids)
        return window.log.get_many(ids)

    assert state.resume(members, get_many, most=64)
    assert read == [m.id for m in messages if m.id % 3 == 0]  # only those that left
    fresh = collected([m for m in messages if m.id % 3])
    assert state.lines == fresh.lines and state.phrases == fresh.phrases
    assert state.collected == fresh.collected and state.continues(members)
    assert not any(count <= 0 for count in state.phrases.values())


def test_a_moved_exchange_reads_only_itself_again() -> None:
    """Moving one exchange out of the middle of a topic used to make every window read the
    whole topic again (thousands of messages at 100,000)."""
    log = CountingLog()
    window = ContextWindow(WindowConfig(history_budget=1024), log=log)
    for i in range(8):
        for topic in TOPICS:
            user, reply = exchange(topic, i)
            window.append("main", "user", user)
            window.append("main", "assistant", reply)
            window.graduate()
    window.prepare_key_lines(math.inf)
    source = max(window.forest.live_roots(), key=window.forest.size)
    target = next(r for r in window.forest.live_roots() if r != source)
    members = window.forest.members(source)
    unit = next(
        u
        for u in window.refiner.units.values()
        if set(u.ids) <= set(members[2:-2]) and source not in u.ids  # from the middle
    )
    assert window.move_unit(unit, source, target)
    log.read.clear()
    assert window.prepare_key_lines(math.inf)
    assert sorted(log.read) == sorted([*unit.ids, *unit.ids])  # out of one, into the other
    for root in (source, target):
        fresh = collected(log.get_many(window.forest.members(root)))
        assert window.key_lines(root) == fresh.lines


def test_a_reordered_topic_or_one_that_lost_many_is_collected_again() -> None:
    window = ContextWindow(WindowConfig(history_budget=1024))
    for i in range(4):
        for role, text in zip(("user", "assistant"), exchange("docker", i), strict=True):
            window.append("main", role, text)
    messages = window.log.get_many(range(1, 9))
    ids = [m.id for m in messages]
    state = collected(messages)
    for members, most in ((ids[::-1], 64), (ids[:3] + ids[4:2:-1] + ids[5:], 64), (ids[4:], 3)):
        assert not state.resume(members, window.log.get_many, most)
        assert state.collected == ids  # unchanged
    assert state.resume(ids[2:], window.log.get_many, 3)
    assert state.collected == ids[2:]


def test_with_no_question_the_room_goes_to_what_is_not_shown_yet() -> None:
    text = "\n\n".join(
        [
            "Set POOL_SIZE=20 in db/pool.py for build_pool and acquire_timeout 30.",
            "So POOL_SIZE=20 in db/pool.py for build_pool and acquire_timeout 30, confirmed.",
            "The gateway listens on port 8443.",
        ]
    )
    state = collected([Message(1, "main", "assistant", text, 0.0, 60)])
    ranking = evenly_ranked(state)
    two_lines = ranking.costs[0] + ranking.costs[1] + 1  # room for the two best-ranked lines
    picked = [line.text for line in pick(ranking, two_lines)]
    assert picked == [state.lines[0].text, "The gateway listens on port 8443."], picked


def test_a_key_line_another_topic_shows_is_not_shown_again() -> None:
    """Each topic picked its own lines: a setting common to several topics (infra's
    `test = "StringEquals"`) was shown by four of them in one render."""
    text = 'Use test = "StringEquals" on the role.\n\nThe gateway listens on port 8443.'
    state = collected([Message(1, "main", "assistant", text, 0.0, 30)])
    ranking = evenly_ranked(state)
    everything = sum(ranking.costs)
    assert len(pick(ranking, everything)) == 2
    shown = {'use test = "stringequals" on the role.'}
    assert [line.text for line in pick(ranking, everything, said=shown)] == [
        "The gateway listens on port 8443."
    ]


def test_a_topic_remembers_its_last_pick_only_for_the_same_ranking_and_arguments() -> None:
    """Renders with no query pick every topic's lines again though nothing changed (10 ms at
    10,000 messages): the pick is kept, and made anew when its ranking or arguments change."""
    text = 'Use test = "StringEquals" on the role.\n\nThe gateway listens on port 8443.'
    state = collected([Message(1, "main", "assistant", text, 0.0, 30)])
    ranking = evenly_ranked(state)
    everything = sum(ranking.costs)
    shown = {'use test = "stringequals" on the role.'}
    for room, said in [(everything, set()), (everything, shown), (ranking.costs[0], set())]:
        assert state.pick(ranking, room, "", said) == pick(ranking, room, said=said)
    kept = state.pick(ranking, everything, "", set())
    assert state.pick(ranking, everything, "", set()) == kept
    again = evenly_ranked(state)  # a new ranking (a new line, a new IDF epoch): picked anew
    assert state.pick(again, everything, "", shown) == pick(again, everything, said=shown)


def test_a_path_named_in_prose_is_a_key_line_of_its_own() -> None:
    path = "src/vs/workbench/browser/parts/editor/tabsTitleControl.ts"
    text = (
        f"I noticed the tab title logic in {path} seems to assume one tab per group, and that the"
        " editor group view redraws the whole title area whenever any tab in it changes, which is"
        " why dragging a tab out of the window flickers. Also see app.ts for the entry point.\n\n"
        "```ts\nimport { x } from 'src/vs/base/common/lifecycle.ts';\n```"
    )
    question = message(1, "user", text)
    lines = [line.text for line in key_lines(question)]
    assert lines == [path]  # once; not the folderless `app.ts`, nor a path inside code
    # with no question, the path can be shown: its sentence (long, no value) never could be
    state = collected([question])
    ranking = rank(state.lines, {}, estimate_tokens)
    assert [line.text for line in pick(ranking, 64)] == [path]


def test_two_words_with_a_slash_are_a_path_only_when_quoted_as_code() -> None:
    text = (
        "Handle add/remove in one place and log TX/RX counts; the fake lives in"
        " `internal/testutil`, the handler in internal/store/orders.go, the views in src/vs/editor."
    )
    lines = [line.text for line in key_lines(message(1, "assistant", text))]
    assert lines == ["internal/testutil", "internal/store/orders.go", "src/vs/editor"]


def test_a_declaration_is_quoted_as_its_name_and_value() -> None:
    """`static constexpr uint32_t kIndexBits = 22;` spent half its tokens on qualifiers, and a
    later `kIndexBits = 20` did not replace it (it was no `name = value` line)."""
    first = message(
        1,
        "assistant",
        "Two constants:\n\n```cpp\nstatic constexpr uint32_t kIndexBits = 22;  // 4M ids\n"
        "for (uint8_t depth = 1; depth <= kMaxDepth; ++depth) {\n```\n\n"
        "```rust\npub const EXIT_PARTIAL: u8 = 3;\n```",
    )
    assert [line.text for line in key_lines(first)] == [
        "kIndexBits = 22",  # (the loop is no declaration, and as logic no key line)
        "EXIT_PARTIAL = 3",
    ]
    later = message(
        2, "assistant", "Fewer bits:\n\n```cpp\nstatic constexpr uint32_t kIndexBits = 20;\n```"
    )
    state = collected([first, later])
    ranking = evenly_ranked(state)
    shown = [line.text for line in ranking.lines]
    assert "kIndexBits = 20" in shown and "kIndexBits = 22" not in shown


def test_a_block_attribute_set_again_is_another_things_not_a_new_value() -> None:
    """HCL sets `name` once per resource: the budget's `name = "pw-prod-monthly"` was dropped
    as "stated again later" by the next resource's `name = …`, in another message."""
    budget = message(
        1,
        "assistant",
        'The budget and its alert:\n\n```hcl\nresource "aws_budgets_budget" "prod" {\n'
        '  name = "pw-prod-monthly"\n  limit_amount = "38000"\n}\n'
        'resource "aws_sns_topic" "billing" {\n  name = "pw-billing-alerts"\n}\n```',
    )
    rule = message(
        2, "assistant", 'And the rate limit:\n\n```hcl\n  name = "pw-tracking-rate-limit"\n```'
    )
    timeout = message(3, "assistant", "Raise it:\n\n```python\nREQUEST_TIMEOUT = 30\n```")
    later = message(4, "assistant", "Lower it again:\n\n```python\nREQUEST_TIMEOUT = 10\n```")
    state = collected([budget, rule, timeout, later])
    ranking = evenly_ranked(state)
    shown = {line.text for line in ranking.lines}
    names = {
        'name = "pw-prod-monthly"',
        'name = "pw-billing-alerts"',
        'name = "pw-tracking-rate-limit"',
    }
    assert names <= shown
    assert "REQUEST_TIMEOUT = 10" in shown and "REQUEST_TIMEOUT = 30" not in shown


def test_a_long_line_is_never_read_as_a_declaration() -> None:
    """The declaration pattern backtracks in the square of a line's length: a line of 100,000
    characters in a pasted file must not reach it (it is no key line either)."""
    long_line = "int " + "a: " * 40_000 + "= 1;"
    pasted = message(1, "assistant", f"```c\n{long_line}\nstatic int kLimit = 8;\n```")
    assert [line.text for line in key_lines(pasted)] == ["kLimit = 8"]


def test_a_code_line_its_reply_explains_ranks_first() -> None:
    text = (
        "Raise `kSetsPerPool` so the pool stops fragmenting.\n\n"
        "```cpp\nconst int kRetryLimit = 512;\nconst int kSetsPerPool = 512;\n```"
    )
    state = collected([message(1, "assistant", text)])
    assert [line.explained for line in state.lines] == [False, True]
    ranking = evenly_ranked(state)
    assert ranking.lines[0].text == "kSetsPerPool = 512"


def test_a_decrement_is_no_flag() -> None:
    assert not states_a_value("--live_;")
    assert states_a_value("run the tests with --no-cache")


def test_a_key_that_opens_a_block_states_nothing() -> None:
    """`"tags": {` is a quoted key and a colon, not a value: its values are the lines after."""
    for opener in ('"tags": {', "ports = [", "env:", "'retry': (", "cost_filter = {"):
        assert not states_a_value(opener), opener
    for setting in ('"team": "payments"', "ports = [8080]", "replicas: 3", "limit = 300"):
        assert states_a_value(setting), setting
    text = 'Tag it:\n\n```json\n{\n  "tags": {\n    "team": "payments"\n  }\n}\n```'
    assert [line.text for line in key_lines(message(1, "assistant", text))] == [
        '"team": "payments"'
    ]


def test_a_loop_a_branch_or_a_query_clause_is_no_key_line() -> None:
    """Their numbers are how the code works, not what was set; prose that starts alike stays."""
    text = (
        "If the pool is full, each worker waits 30 s.\n\n"
        "```cpp\nfor (int i = 0; i < 500; ++i) {\nconst int kRetryLimit = 8;\n"
        "if (chunk.count == 0) continue;\nreturn Status(400);\n```\n\n"
        "```sql\nselect day, count(*) from events\ngroup by 1\norder by 2 desc\nlimit 25;\n```"
    )
    assert [line.text for line in key_lines(message(1, "assistant", text))] == [
        "If the pool is full, each worker waits 30 s.",
        "kRetryLimit = 8",
    ]
    waf_rule = message(2, "assistant", "Per IP:\n\n```hcl\nlimit = 300\noffset: 10\n```")
    assert [line.text for line in key_lines(waf_rule)] == ["limit = 300", "offset: 10"]  # keys


def test_a_constant_outranks_a_newer_plain_setting() -> None:
    """An upper snake case name (a constant, an environment variable, a config key) is what a
    person asks about again by name: `WARM_IP_TARGET = 5` before a newer `warm_ip_goal = 5`."""
    constant = message(1, "assistant", "Fewer spare IPs:\n\n```\nWARM_IP_TARGET = 5\n```")
    plain = message(2, "assistant", "And the pool:\n\n```\nwarm_ip_goal = 5\n```")
    state = collected([constant, plain])
    assert [line.constant for line in state.lines] == [True, False]
    assert [line.text for line in evenly_ranked(state).lines] == [
        "WARM_IP_TARGET = 5",
        "warm_ip_goal = 5",
    ]


def test_a_value_the_user_states_ranks_below_the_reply_that_decides() -> None:
    """The user's `max_conns = 10` is what they had; the reply's `pool_size = 40` is what was
    decided. A path the user names keeps its worth: it is where the work is."""
    reply = message(1, "assistant", "Raise it:\n\n```\npool_size = 40\n```")
    user = message(
        2,
        "user",
        "My worker config in deploy/worker/settings.toml has\n\n```\nmax_conns = 10 # was 8\n```",
    )
    state = collected([reply, user])
    assert [line.text for line in state.lines] == [
        "pool_size = 40",
        "deploy/worker/settings.toml",
        "max_conns = 10",
    ]
    ranked = [line.text for line in evenly_ranked(state).lines]
    assert ranked.index("pool_size = 40") < ranked.index("max_conns = 10")
    assert ranked.index("deploy/worker/settings.toml") < ranked.index("max_conns = 10")
