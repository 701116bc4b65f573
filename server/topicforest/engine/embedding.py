"""Code-aware TF-IDF: identifiers and paths are kept whole *and* split into parts.

Vectors are raw term counts (`Counter`); IDF is applied at comparison time with the current
document frequencies, so centroids built from early messages never carry stale weights (the
"IDF drift" of embedding each message once with the IDF of its day). The vocabulary is bounded:
past `max_vocabulary` terms the rarest are pruned and treated as unseen.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topicforest.engine.state import VocabularyDelta

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing don done down during each
    few for from further get got had has have having he her here hers him his how i if in
    into is it its itself just let like ll me more most my myself no nor not now of off on
    once only or other our ours out over own re same she should so some such than that the
    their theirs them then there these they this those through to too under until up ve very
    was we were what when where which while who whom why will with would you your yours
    yourself yes ok okay thanks thank please also use using used need needs want one two see
    now still yeah sure great cool nice right maybe think know
    """.split()
)

FILE_EXTENSIONS = frozenset(
    """
    py pyi ts tsx js jsx mjs cjs json yaml yml toml md rst cfg ini txt sh bash zsh css scss
    less html vue svelte rs go java kt c h cc cpp hpp cs rb php sql lock env ipynb csv proto
    graphql gql xml gradle swift dart lua r jl tf dockerfile mk
    """.split()
)
SPECIAL_FILES = frozenset({"dockerfile", "makefile", "procfile", "jenkinsfile", "gemfile"})
MIME_HEADS = frozenset({"application", "audio", "font", "image", "multipart", "text", "video"})

_CHUNK = re.compile(r"[A-Za-z0-9_$@~-]*[A-Za-z0-9_][\w$@~./:-]*[A-Za-z0-9_]|[A-Za-z0-9_]+")
_PART_SPLIT = re.compile(r"[/._:$@~-]+")
# camelCase parts; an acronym's plural is the acronym (`URLs` -> `URL`, `PRs` -> `PR`), not two
# words (`UR`, `Ls`): "how long are upload URLs valid", "CI posts plans on PRs" weighed made-up
# terms most. (With a query, dev 315 -> 317 of 334, at 1,024 tokens 276 -> 279, at 4,096 321 ->
# 320; external and held-out unchanged. No query, dev 117 -> 116: topics re-formed.)
_CAMEL = re.compile(r"[A-Z]{2,}(?=s(?![a-z]))|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JOINS_DOT = re.compile(r"[\w./~-]")  # a dot after one of these is not a dotfile's
_JOINS_SLASH = re.compile(r"[\w.~-]")  # a slash after one of these is not a root's (./src)


@dataclass(slots=True)
class Features:
    """What one message contributes: raw term counts plus the files and symbols it names."""

    terms: Counter[str]
    files: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)


def is_file_path(chunk: str) -> bool:
    """A file or folder a developer would recognise: `app/db.py`, `Dockerfile`, `src/lexer`,
    `/etc/hosts`; not a URL, a rate (`300/minute`), a route (`/healthz`) or a MIME type."""
    if "://" in chunk:
        return False
    stem, dot, ext = chunk.rpartition(".")
    if dot and stem and ext.lower() in FILE_EXTENSIONS and not stem.replace(".", "").isdigit():
        return True
    if chunk.rsplit("/", 1)[-1].lower() in SPECIAL_FILES:
        return True
    segments = chunk.strip("/").split("/")
    return (
        len(segments) >= 2
        and all(len(s) >= 2 and not s[0].isdigit() for s in segments)
        and segments[0].lower() not in MIME_HEADS
        and not all(s.lower() in STOPWORDS for s in segments)  # and/or
    )


def is_symbol(chunk: str) -> bool:
    if not _IDENTIFIER.fullmatch(chunk.replace(".", "_")) or len(chunk) < 3:
        return False
    inner_upper = any(c.isupper() for c in chunk[1:]) and any(c.islower() for c in chunk)
    return "_" in chunk.strip("_") or inner_upper or ("." in chunk and not chunk.endswith("."))


def split_parts(chunk: str) -> list[str]:
    parts: list[str] = []
    for piece in _PART_SPLIT.split(chunk):
        for sub in piece.split("_"):
            parts.extend(_CAMEL.findall(sub) or ([sub] if sub else []))
    return parts


def extract(text: str, root: str | None = None) -> Features:
    """Tokenize `text` the code-aware way. Absolute paths keep their slash; those under the
    folder `root` (the workspace, when known) are named relative to it, as a developer does."""
    terms: Counter[str] = Counter()
    files: list[str] = []
    symbols: list[str] = []
    for match in _CHUNK.finditer(text):
        chunk = match.group().strip("-.:")
        if not chunk:
            continue
        if is_file_path(chunk):
            path = _rooted(text, match.start(), _dotted(text, match.start(), chunk))
            files.append(_relative(path, root))
        elif is_symbol(chunk):
            symbols.append(chunk)
        terms.update(chunk_terms(chunk))
    return Features(terms, files, symbols)


def extract_terms(text: str) -> Counter[str]:
    """`extract(text).terms`, without looking for files and symbols (half the work)."""
    return Counter(chain.from_iterable(map(chunk_terms, chunks(text))))


_SHORT_COUNT = re.compile(r"(\d+(?:\.\d+)?)([km])")
_MAGNITUDE = {"k": 1_000, "m": 1_000_000}


def spelled_out(term: str) -> str | None:
    """The digits of a count said in short (`1m` -> `1000000`, `2.5k` -> `2500`), else None."""
    match = _SHORT_COUNT.fullmatch(term)
    if match is None:
        return None
    value = float(match[1]) * _MAGNITUDE[match[2]]
    return str(int(value)) if value.is_integer() else None


def chunks(text: str) -> list[str]:
    """The words, identifiers and paths of `text`, as `chunk_terms` reads them."""
    return [chunk for match in _CHUNK.findall(text) if (chunk := match.strip("-.:"))]


# Words recur (a render excerpts messages it has not split before, and splitting their words
# again was most of that first-time cost); a chunk is a few dozen bytes.
@lru_cache(maxsize=8192)
def chunk_terms(chunk: str) -> tuple[str, ...]:
    """One chunk's terms, a repeated term as often as it occurs: code-like chunks whole and
    split into their parts."""
    terms: list[str] = []
    lower = chunk.lower()
    if not chunk.isalpha() or not (chunk.islower() or chunk.istitle()):  # code-like
        if len(lower) > 1 and not (lower.isdigit() and len(lower) < 2):
            terms.append(lower)
        for part in split_parts(chunk):
            p = part.lower()
            if len(p) > 1 and p != lower and p not in STOPWORDS:
                terms.append(p)
    elif len(lower) > 2 and lower not in STOPWORDS:
        terms.append(lower)
    return tuple(terms)


def _dotted(text: str, start: int, path: str) -> str:
    """`path` with the leading dot the chunk pattern leaves out (`.github/workflows/ci.yml`),
    when the text has one right before it and nothing joined to that dot."""
    if start and text[start - 1] == "." and (start == 1 or not _JOINS_DOT.match(text[start - 2])):
        return "." + path
    return path


def _rooted(text: str, start: int, path: str) -> str:
    """`path` with the leading slash the chunk pattern leaves out (`/usr/lib/x.py` in a pasted
    traceback), when the text has one right before it that is not part of `./` or `a/`."""
    if start and text[start - 1] == "/" and (start == 1 or not _JOINS_SLASH.match(text[start - 2])):
        return "/" + path
    return path


def _relative(path: str, root: str | None) -> str:
    if root and path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) + 1 :] or path
    return path


def dot(a: Mapping[str, float], b: Mapping[str, float], idf: Mapping[str, float]) -> float:
    """IDF-weighted dot product of two raw-count vectors (iterates the smaller one)."""
    if len(a) > len(b):
        a, b = b, a
    total = 0.0
    for term, count in a.items():
        other = b.get(term)
        if other:
            w = idf.get(term, 0.0)
            total += count * other * w * w
    return total


def norm_sq(vec: Mapping[str, float], idf: Mapping[str, float]) -> float:
    total = 0.0
    for term, count in vec.items():
        w = idf.get(term, 0.0)
        total += count * count * w * w
    return total


class Embedder:
    """Incremental vocabulary with document frequencies and a bounded size."""

    # Documents between IDF "epochs" (cached norms are refreshed per epoch): at least this many,
    # and a tenth of the corpus, so a young corpus gets fresh weights often (a term first seen
    # in message 3 would otherwise keep the IDF of a 3-document corpus until message 256).
    REFRESH_EVERY = 16

    def __init__(self, max_vocabulary: int = 50_000, root: str | None = None) -> None:
        self.max_vocabulary = max_vocabulary
        self.root = root.rstrip("/") if root else None  # the workspace folder, if known
        self.df: dict[str, int] = {}
        self.n_docs = 0
        self.epoch = 0
        self._idf: dict[str, float] = {}
        self._docs_at_epoch = 0
        self.prunes = 0  # bumps whenever rare terms are forgotten
        # Terms whose df or idf changed since the last take_changes(); None: possibly all (a new
        # epoch reweighs every term). Lets a persistent copy write a message's terms, not the
        # whole vocabulary.
        self._changed: set[str] | None = None

    def embed(self, text: str) -> Features:
        """Features of a message that joins the corpus; updates document frequencies."""
        features = extract(text, self.root)
        self.n_docs += 1
        df = self.df
        for term in features.terms:
            df[term] = df.get(term, 0) + 1
        if self._changed is not None:
            self._changed.update(features.terms)
        if len(df) > self.max_vocabulary:
            self._prune()
        features.terms = Counter({t: c for t, c in features.terms.items() if t in df})
        if self.n_docs - self._docs_at_epoch >= max(self.REFRESH_EVERY, self._docs_at_epoch // 10):
            self._new_epoch()
        else:
            for term in features.terms:  # keep idf current for brand-new terms
                if term not in self._idf:
                    self._idf[term] = self._idf_value(df[term])
        return features

    def features(self, text: str) -> Features:
        """What `embed` gives a message already in the corpus (known terms only); no change."""
        features = extract(text, self.root)
        features.terms = Counter({t: c for t, c in features.terms.items() if t in self.df})
        return features

    def forget(self, documents: list[Counter[str]]) -> None:
        """Take documents (their full term counts, as `extract` gives) out of the corpus, then
        reweigh every term: deleting a thread is rare, and its terms may now be unseen."""
        df = self.df
        for terms in documents:
            self.n_docs = max(0, self.n_docs - 1)
            for term in terms:
                left = df.get(term, 0) - 1
                if left > 0:
                    df[term] = left
                else:
                    df.pop(term, None)
        self._new_epoch()

    def embed_query(self, text: str) -> Counter[str]:
        """Vector for a query; never changes the vocabulary. A count said in short ("1M
        entries", "10k rows") also asks for its digits, as benchmarks and logs print it."""
        terms = extract_terms(text)
        for term, times in list(terms.items()):
            if (digits := spelled_out(term)) is not None:
                terms[digits] += times
        return terms

    @property
    def idf(self) -> Mapping[str, float]:
        """IDF per known term as of the current epoch; unknown terms weigh nothing."""
        return self._idf

    @property
    def docs_at_epoch(self) -> int:
        """How many documents the corpus held when the current IDF was computed."""
        return self._docs_at_epoch

    def restore(self, stored: VocabularyDelta) -> bool:
        """Take a stored copy's document frequencies and IDF exactly (recomputing the IDF
        would change titles and clustering after a reload: it is refreshed only per epoch).
        Returns whether this starts a new epoch (`stored.whole`), else the terms are updated
        in place within the current one."""
        if not stored.whole:
            self.df.update(stored.df)
            self._idf.update(stored.idf)
            self.n_docs = stored.n_docs
            return False
        self.df, self._idf = dict(stored.df), dict(stored.idf)
        self.n_docs, self._docs_at_epoch = stored.n_docs, stored.docs_at_epoch
        self.epoch += 1  # cached norms and pair products are recomputed from the new IDF
        return True

    def cosine(self, a: Mapping[str, int], b: Mapping[str, int]) -> float:
        idf = self._idf
        denom = math.sqrt(norm_sq(a, idf) * norm_sq(b, idf))
        return dot(a, b, idf) / denom if denom else 0.0

    def _idf_value(self, df: int) -> float:
        return math.log((1 + self.n_docs) / (1 + df)) + 1.0

    def take_changes(self) -> set[str] | None:
        """The terms changed since the last call (None: treat every term as changed)."""
        changed, self._changed = self._changed, set()
        return changed

    def _new_epoch(self) -> None:
        self._changed = None
        self.epoch += 1
        self._docs_at_epoch = self.n_docs
        self._idf = {t: self._idf_value(d) for t, d in self.df.items()}

    def _prune(self) -> None:
        keep = int(self.max_vocabulary * 0.9)
        ranked = sorted(self.df.items(), key=lambda item: item[1], reverse=True)
        self.df = dict(ranked[:keep])
        self.prunes += 1
        self._new_epoch()
