"""The offline summarizer: no network, deterministic, keeps the facts code conversations hinge on.

It picks the most information-dense sentences (those naming files, identifiers, versions, numbers,
flags) within the target size, keeps them in conversation order, then lists any named entity not
yet covered. Fenced code is never copied as a block; only its lines that name things survive.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from topicforest.engine.embedding import is_file_path, is_symbol
from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import SummaryRequest, SummaryResult
from topicforest.engine.tokens import estimate_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")
_ENTITY = re.compile(
    r"--?[A-Za-z][\w-]+(?:=\S+)?"  # flags
    r"|\bv?\d+(?:\.\d+)+\b"  # versions
    r"|\b\d{2,}[\w%]*\b"  # numbers, ports, sizes
    r"|[\w.-]*[/.][\w./-]*\w"  # paths, dotted names
    r"|\b[A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*)\b"  # snake_case / camelCase
    r"|\b[A-Z][A-Z0-9_]{2,}\b"  # CONSTANTS, ENV_VARS
)


def entities(text: str) -> list[str]:
    found = []
    for match in _ENTITY.findall(text):
        token = match.strip(".,:;()")
        if len(token) < 2:
            continue
        if ("/" in token or "." in token) and not (
            is_file_path(token) or is_symbol(token) or token[:1].isdigit() or token[1:2].isdigit()
        ):
            continue
        found.append(token)
    return found


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            continue
        if not stripped:
            continue
        if in_fence:
            if entities(stripped):
                out.append(stripped.strip("` "))
            continue
        out.extend(s.strip() for s in _SENTENCE_END.split(stripped.lstrip("#>*- ")) if s.strip())
    return out


SENTENCE_SHARE = 0.5
LEAD = "I asked you about"


class Digest:
    """A text cut into scored sentences and named things, ready to be cut to any size quickly."""

    def __init__(self, previous_summary: str | None, messages: Sequence[Message]) -> None:
        units: list[tuple[str, str]] = []  # (speaker prefix, sentence)
        if previous_summary:  # its lead sentence is written anew below
            units += [("", s) for s in _sentences(previous_summary) if not s.startswith(LEAD)]
        for message in messages:
            speaker = "I said" if message.role == "user" else "You said"
            units += [(speaker, s) for s in _sentences(message.content)]
        n = len(units)
        found = [entities(sentence) for _, sentence in units]
        scored = []
        for position, ((_, sentence), ents) in enumerate(zip(units, found, strict=True)):
            recency = 0.5 * position / max(1, n - 1)
            density = len(set(ents)) / (1 + estimate_tokens(sentence) / 25)
            scored.append((len(set(ents)) + density + recency, position))
        self.units = units
        self.costs = [estimate_tokens(f"{speaker}: {sentence}") + 1 for speaker, sentence in units]
        self.ranked = [position for _, position in sorted(scored, reverse=True)]
        # every named thing, newest first: later values supersede earlier ones
        self.entities = list(reversed(dict.fromkeys(e for ents in found for e in ents)))
        self.entity_costs = [estimate_tokens(e) + 1 for e in self.entities]
        named = Counter(e for ents in found for e in ents).most_common(3)
        self.lead = f"{LEAD} {', '.join(e for e, _ in named)}." if named else f"{LEAD} this."

    def summary(self, target_tokens: int, sentence_share: float = SENTENCE_SHARE) -> str:
        """First person, as the user: a lead naming the topic, then `select`'s text."""
        body = self.select(target_tokens - estimate_tokens(self.lead), sentence_share)
        return f"{self.lead} {body}" if body else self.lead

    def select(self, target_tokens: int, sentence_share: float = SENTENCE_SHARE) -> str:
        """Half the room for the densest sentences, then every named thing not yet covered,
        then sentences again with what is left; sentences keep their conversation order."""
        budget = max(16, target_tokens)
        used = 0
        chosen: set[int] = set()

        def take_sentences(limit: int) -> None:
            nonlocal used
            for position in self.ranked:
                if position not in chosen and used + self.costs[position] <= limit:
                    chosen.add(position)
                    used += self.costs[position]

        take_sentences(int(budget * sentence_share))
        covered = " ".join(self.units[i][1] for i in chosen).lower()
        missing: list[str] = []
        for ent, cost in zip(self.entities, self.entity_costs, strict=True):
            if used + cost <= budget and ent.lower() not in covered:
                missing.append(ent)
                covered += " " + ent.lower()
                used += cost
        take_sentences(budget)
        lines = [
            f"{u[0]}: {u[1]}" if u[0] else u[1] for i, u in enumerate(self.units) if i in chosen
        ]
        text = " ".join(lines)
        if missing:
            text += (" " if text else "") + "Also mentioned: " + ", ".join(reversed(missing)) + "."
        return text


class ExtractiveSummarizer:
    name = "offline-extractive"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return self.summarize_now(request)

    def summarize_now(self, request: SummaryRequest) -> SummaryResult:
        """Synchronous core, also used where no event loop is running."""
        digest = Digest(request.previous_summary, request.messages)
        summary = digest.summary(request.target_tokens) if digest.units else _fallback(request)
        return SummaryResult(
            text=summary,
            model=self.name,
            input_tokens=estimate_tokens(request.transcript()),
            output_tokens=estimate_tokens(summary),
        )


def _fallback(request: SummaryRequest) -> str:
    """Messages with no sentence to pick (only code, say): their first line."""
    for message in request.messages:
        return f"{LEAD} " + message.content.strip().splitlines()[0][: request.target_tokens * 3]
    return request.previous_summary or f"{LEAD} nothing yet."
