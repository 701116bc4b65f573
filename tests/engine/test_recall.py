"""The recall index on its own: rare query terms decide, and scoring work is bounded."""

from __future__ import annotations

from topicforest.engine.recall import (
    ABBREVIATION_SHARE,
    MAX_POSTINGS,
    RARITY_POWER,
    RecallIndex,
)


def index_of(postings: dict[str, range], messages: int) -> RecallIndex:
    index = RecallIndex()
    terms: dict[int, list[str]] = {i: [] for i in range(1, messages + 1)}
    for term, ids in postings.items():
        for i in ids:
            terms[i].append(term)
    for i, message_terms in terms.items():
        index.add(i, message_terms, tokens=40)
    return index


def test_the_rarest_terms_rank_first_and_the_newer_of_equals_wins() -> None:
    index = index_of({"build_loader": range(5, 7), "loader": range(1, 40)}, messages=400)
    idf = {"build_loader": 5.0, "loader": 2.0}
    best = index.search(index.weights({"build_loader": 1, "loader": 1}, idf), limit=3)
    assert [mid for mid, _ in best[:2]] == [6, 5]


def test_a_rare_name_the_question_shares_outweighs_two_common_words() -> None:
    """IDF's log scale alone let two common words outvote the one name that says what was
    asked about."""
    index = index_of(
        {"removeoncomplete": range(3, 4), "queue": range(10, 20), "redis": range(10, 20)},
        messages=400,  # (the newest of equals wins: these are all old)
    )
    idf = {"removeoncomplete": 4.0, "queue": 2.3, "redis": 2.3}
    weights = index.weights(["removeoncomplete", "queue", "redis"], idf)
    assert index.search(weights, limit=1)[0][0] == 3


def test_scoring_stops_adding_common_terms_past_the_postings_bound() -> None:
    size = MAX_POSTINGS // 2 + 100  # two of these terms together pass the bound
    index = index_of(
        {
            "rare": range(1, 3),
            "common_a": range(10, 10 + size),
            "common_b": range(20_000, 20_000 + size),
        },
        messages=40_000,  # enough messages that neither term counts as too common to use
    )
    idf = {"rare": 9.0, "common_a": 3.0, "common_b": 3.0}
    weights = index.weights({"rare": 1, "common_a": 1, "common_b": 1}, idf)
    found = {mid for mid, _ in index.search(weights, 5000)}
    assert {1, 2} <= found
    assert found & set(range(10, 10 + size))  # the first common term is still scored
    assert not found & set(range(20_000, 20_000 + size))  # the second would pass the bound


def test_a_rarest_term_past_the_bound_is_scored_in_its_newest_messages() -> None:
    index = index_of({"loader": range(1, 2 * MAX_POSTINGS + 1)}, messages=10 * MAX_POSTINGS)
    found = [mid for mid, _ in index.search({"loader": 2.0}, 10 * MAX_POSTINGS)]
    assert sorted(found) == list(range(MAX_POSTINGS + 1, 2 * MAX_POSTINGS + 1))


def test_a_code_word_that_abbreviates_a_question_word_is_found_at_a_share_of_its_weight() -> None:
    """ "Which measurement command does the driver send?" missed `SHT40_CMD_MEAS_HIGH 0xFD`:
    code shortens what a question spells out."""
    index = index_of({"meas": range(3, 4), "measurement": range(7, 8)}, messages=40)
    idf = {"meas": 4.0, "measurement": 4.0, "me": 1.0}
    weights = index.weights(["measurement"], idf)
    weight = 4.0**RARITY_POWER
    assert weights == {"measurement": weight, "meas": weight * ABBREVIATION_SHARE}
    assert [mid for mid, _ in index.search(weights)] == [7, 3]  # the word itself first
    assert index.weights(["meas"], idf) == {"meas": weight}  # too short to be shortened
