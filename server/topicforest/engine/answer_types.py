"""What kind of value a question asks for, and whether a text states one.

"Which Django version…", "how big is the image…", "how long does the diff take…": the question's
words name a kind of value, not the value, so the message that answers ("Django==4.2.11",
"6.8 GB now", "61.3 ms") shares few of its words with it. Recall prefers, among the messages that
match, those stating a value of the asked kind, and an excerpt keeps the line that states it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Values = tuple[re.Pattern[str], ...]  # how the kinds of value a question asks for are stated


@dataclass(frozen=True)
class AnswerType:
    cue: re.Pattern[str]  # question words that ask for this kind of value
    value: re.Pattern[str]  # how a text states one


def _type(cue: str, value: str) -> AnswerType:
    return AnswerType(re.compile(cue, re.IGNORECASE), re.compile(value, re.IGNORECASE))


_NUMBER = r"\d+(?:[.,]\d+)?"
TYPES = (
    _type(r"\b(?:versions?|pinned|release)\b", r"\bv?\d+\.\d+(?:\.\d+)*\b"),
    _type(
        # "size" the noun, not the verb ("how does it size its pools"); memory or disk as
        # an amount, not as a subject ("what caused the memory leak"): a question about a leak
        # or a pool boosted the messages that state sizes. (With a query, dev 313 -> 314 of
        # 334; 1,024 tokens 272 -> 274; 4,096, external and held-out unchanged.)
        r"\b(?:how big|how large|size\b(?!\s+(?:its|the|their|them|it|a|an|each)\b)"
        r"|how much (?:memory|disk|space|ram|vram)|peak memory"
        r"|(?:memory|disk) (?:usage|use|footprint|limits?|requests?))\b",
        rf"\b{_NUMBER}\s?(?:[KMGTP]i?B|[KMGTP]i|bytes)\b",  # 1536Mi: Kubernetes' quantities
    ),
    _type(
        r"\b(?:how long|how fast|how slow|latency|duration|timeout)\b",
        rf"\b{_NUMBER}\s?(?:ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hours?|days?)\b",
    ),
    _type(r"\b(?:dates?|when|which day)\b", r"\b\d{4}-\d{2}-\d{2}\b"),
    _type(r"\b(?:how often|frequency|rate)\b", rf"\b\d+ (?:in|out of) \d+\b|\b{_NUMBER}\s?%"),
    _type(
        # "Where do the outputs go / the traces get exported / the template live": a place in
        # a project is a path, a file, a host and port, a URL, a channel or an address. (With
        # a query, dev 314 -> 315 of 334, 1,024 tokens 275 -> 276, back to back 314 -> 315;
        # 1,536 and 4,096 tokens, external and held-out unchanged.)
        r"\bwhere\b",
        r"\w/[\w.-]"  # a path: `conf/trainer/default.yaml`, `orbit/prod/pii_salt`
        r"|\b[\w-]+\.[a-z]{1,5}\b(?![.(])"  # a file: `loop.py` (not a call, `os.path.join(`)
        r"|\b[\w.-]+:\d{2,5}\b|https?://"  # a host and port, a URL
        r"|(?<![\w&])#[a-z][\w-]+|\b0x[0-9a-f]+\b",  # a channel, an address
    ),
)


def asked_for(question: str) -> Values:
    """The value patterns of the kinds of value `question` asks for (often none)."""
    return tuple(kind.value for kind in TYPES if kind.cue.search(question))


# "Which Django version…", "the dbt-core and dbt-snowflake versions", "which version of the SQL
# Server provider": the thing whose version is asked, named right before "version" (or after
# "version of"). A text stating that thing's version (`Django==4.2.11`, `great_expectations ==
# 0.18.8`, `@playwright/test@1.42.1`, `apache-airflow-providers-amazon==8.16.0`) answers it.
_NAME = r"[A-Za-z@][\w.+/@-]*"
_NAMES_VERSION = re.compile(
    rf"(?:\b({_NAME})\s+(?:and|&)\s+)?\b({_NAME})\s+versions?\b", re.IGNORECASE
)
_VERSION_OF = re.compile(rf"\bversions?\s+of\s+(?:the\s+)?({_NAME})", re.IGNORECASE)
_NOT_A_NAME = frozenset(
    "which what whose the a an this that these those its their our your my same new old "
    "latest current exact minimum maximum major minor and or".split()
)
# the name, then a few characters of a pin or a separator (`==`, `@`, `: "`, ` v`), then a version
_STATED_VERSION = r"(?<![A-Za-z]){}[\w-]{{0,24}}[\s\"'=:@~^>v]{{0,5}}\d+\.\d+"


def named_versions(question: str) -> Values:
    """Patterns of a text stating the version of what `question` asks the version of (none if
    it asks no version of a named thing)."""
    names = [
        name.strip(".")
        for pattern in (_NAMES_VERSION, _VERSION_OF)
        for match in pattern.finditer(question)
        for name in match.groups()
        if name and len(name.strip(".")) >= 2 and name.lower() not in _NOT_A_NAME
    ]
    return tuple(
        re.compile(_STATED_VERSION.format(re.escape(name)), re.IGNORECASE)
        for name in dict.fromkeys(names)
    )


def states(text: str, values: Values) -> bool:
    """Whether `text` states a value of one of the kinds `values` (`asked_for`) describes."""
    return any(value.search(text) for value in values)
