"""Code-aware TF-IDF: identifiers kept whole and split, bounded vocabulary, pure queries."""

from __future__ import annotations

from collections import Counter

from topicforest.engine.centroids import CentroidIndex
from topicforest.engine.embedding import Embedder, extract, extract_terms, spelled_out


def test_identifiers_and_paths_are_kept_whole_and_split() -> None:
    features = extract(
        "Fix build_loader in data/loader.py; QueryManager.ts calls refreshAccessToken"
    )
    for whole in ("build_loader", "data/loader.py", "querymanager.ts", "refreshaccesstoken"):
        assert whole in features.terms
    for part in ("build", "loader", "data", "query", "manager", "refresh", "access", "token"):
        assert part in features.terms
    assert "data/loader.py" in features.files and "QueryManager.ts" in features.files
    assert "build_loader" in features.symbols and "refreshAccessToken" in features.symbols
    assert "the" not in extract("the loader and the config").terms


def test_an_acronyms_plural_is_the_acronym_not_two_words() -> None:
    """`URLs` split as camelCase gave `ur` and `ls`: rare made-up terms that outweighed the
    question's real words in recall."""
    terms = extract_terms("Upload URLs for PRs, IDs and CPUs; getURLs, HTTPServer, APIsV2")
    for term in ("urls", "url", "prs", "pr", "ids", "id", "cpus", "cpu", "api", "http", "server"):
        assert term in terms, term
    for made_up in ("ur", "ls", "rs", "ds", "cp", "us", "ap"):  # what the split made of them
        assert made_up not in terms, made_up


def test_terms_alone_are_the_terms_of_a_full_extract() -> None:
    """Recall excerpts and queries take `extract_terms`, which skips files and symbols: their
    terms must be the ones the index holds."""
    texts = [
        "Fix build_loader in data/loader.py; QueryManager.ts calls refreshAccessToken",
        "```python\nfrom app.db import get_session  # 3 retries, timeout=2.5s\n```",
        'Traceback: File "/usr/lib/python3.11/x.py", line 12 -- ValueError: bad id-42 :: ok.',
        "Set limit=300/minute on /healthz, .github/workflows/ci.yml, and the Dockerfile; v1.2.3",
        "",
    ]
    for text in texts:
        assert extract_terms(text) == extract(text).terms
    assert extract_terms(texts[0])["loader"] == 2  # counts, not only the set


def test_files_are_what_a_developer_would_call_files() -> None:
    """The Topics view lists a topic's files: rates, routes, URLs and MIME types are not files,
    and a dotfile folder keeps its dot."""
    text = (
        "Set limit=300/minute, skip /healthz, send text/html and/or JSON to "
        "postgresql://app:secret@db/app. Edit .github/workflows/ci.yml, app/db.py, src/lexer, "
        "/etc/hosts and the Dockerfile; foo.github/x.py stays as written."
    )
    assert extract(text).files == [
        ".github/workflows/ci.yml",
        "app/db.py",
        "src/lexer",
        "/etc/hosts",
        "Dockerfile",
        "foo.github/x.py",
    ]


def test_absolute_paths_from_a_pasted_traceback_keep_their_slash() -> None:
    """Issue 15: tooltips showed `home/dev/proj/app/db.py` (slash cut off) beside `app/db.py`."""
    trace = (
        'Traceback (most recent call last):\n  File "/usr/lib/python3.11/json/decoder.py", '
        'line 337, in decode\n  File "/home/dev/proj/app/db.py", line 12\n'
        "see ./src/x.py and ../lib/y.py"
    )
    assert extract(trace).files == [
        "/usr/lib/python3.11/json/decoder.py",
        "/home/dev/proj/app/db.py",
        "src/x.py",
        "lib/y.py",
    ]
    # under the workspace folder (when the engine knows it): named as the developer does
    assert extract(trace, "/home/dev/proj").files[:2] == [
        "/usr/lib/python3.11/json/decoder.py",
        "app/db.py",
    ]
    embedder = Embedder(root="/home/dev/proj/")
    assert embedder.embed(trace).files[1] == "app/db.py"
    assert extract('"/home/dev/project2/x.py"', "/home/dev/proj").files == [
        "/home/dev/project2/x.py"
    ]


def test_embed_query_never_mutates_the_vocabulary() -> None:
    embedder = Embedder()
    embedder.embed("build_loader data/loader.py")
    before = (dict(embedder.df), embedder.n_docs, embedder.epoch)
    vector = embedder.embed_query("completely new words xylophone build_loader")
    assert vector["xylophone"] == 1
    assert (dict(embedder.df), embedder.n_docs, embedder.epoch) == before


def test_vocabulary_is_bounded() -> None:
    embedder = Embedder(max_vocabulary=500)
    for i in range(400):
        embedder.embed(f"unique_{i} word{i}a word{i}b common shared_term")
    assert len(embedder.df) <= 500
    assert "common" in embedder.df and "shared_term" in embedder.df  # frequent terms survive


def test_centroids_use_current_idf_not_the_idf_at_insertion_time() -> None:
    """IDF drift: a term that later becomes common must stop dominating old centroids."""
    embedder = Embedder()
    index = CentroidIndex(embedder)
    first = embedder.embed("pytest flaky fixture")
    index.add(1, first, 3, 0.0)
    other = embedder.embed("docker image layer")
    index.add(2, other, 3, 0.0)
    query = Counter({"pytest": 1, "docker": 1})
    early = index.similarity(1, query, 2.0), index.similarity(2, query, 2.0)
    for _ in range(Embedder.REFRESH_EVERY + 1):  # "pytest" becomes ubiquitous
        embedder.embed("pytest everywhere")
    late = index.similarity(1, query, 2.0), index.similarity(2, query, 2.0)
    assert late[0] / late[1] < early[0] / early[1]


def test_incremental_norms_and_pair_dots_match_a_fresh_computation() -> None:
    embedder = Embedder()
    index = CentroidIndex(embedder)
    texts = [f"build_loader worker{i % 3} docker{i % 2} pytest{i % 5}" for i in range(30)]
    for i, text in enumerate(texts):
        index.add(i % 4, embedder.embed(text), 5, float(i))
        if i % 7 == 6:
            index.pair_similarity(0, 1)  # populate the cache as the window would
    index.merge(0, 3)
    cached = index.pair_similarity(0, 1)
    fresh = CentroidIndex(embedder)
    for root in (0, 1):
        fresh.centroids[root] = index.centroids[root]
    from topicforest.engine.embedding import norm_sq

    for root in (0, 1):
        assert abs(index.centroids[root].norm_sq - norm_sq(index[root].terms, embedder.idf)) < 1e-6
    assert abs(cached - fresh.pair_similarity(0, 1)) < 1e-9


def test_a_count_said_in_short_asks_for_its_digits_too() -> None:
    # "How long does the diff take for 1M entries?": the benchmark prints `diff/1000000`.
    query = Embedder().embed_query("How long does the diff take for 1M entries, and 2.5k?")
    assert query["1000000"] == 1 and query["2500"] == 1
    assert query["1m"] == 1  # the words themselves stay
    assert spelled_out("10k") == "10000"
    assert spelled_out("1.0005k") is None and spelled_out("k8s") is None and spelled_out("5m")
