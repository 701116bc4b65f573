"""Key lines: the facts of a topic most likely to be asked about again, for a render with no query.

A summary capped near a fifth of its input drops most facts, and without a question nothing brings
them back. So besides its summary a topic shows its key lines: short lines and sentences of its
original messages that state a value (a setting, a version, a port, a flag, a path, a number),
and the file paths their prose names (`src/vs/editor/tabs.ts` from a long sentence), preferring
the assistant's (where decisions and code land), code lines that name what the message's prose
explains, rare words, many named things and later messages (a value may have been changed since),
at the best worth per token. Trailing comments and runs of spaces are trimmed, a declaration is
quoted as its name and value (`kIndexBits = 22`); a setting stated again later replaces the
earlier line (not a block attribute such as HCL's `name`, set once per resource).
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache

from topicforest.engine.embedding import STOPWORDS, extract_terms, is_file_path
from topicforest.engine.forest import list_changes
from topicforest.engine.messages import Message
from topicforest.engine.passages import VALUE, split_passages
from topicforest.engine.summarize.extractive import entities
from topicforest.engine.tokens import TokenCounter

MAX_LINE_CHARS = 200  # longer passages are prose, not a fact one can quote
ASSISTANT_WEIGHT = 2.0
# A value the user states (a log line, their code as it was, an error) counts a quarter:
# the reply after it holds the value decided. A path the user names does not (where the work
# is). Shown user lines were the only holder of a fact 1 time in 70 on the dev set, 0 in 5 on
# the held-out set. No query, at 2,048 tokens: dev 115 -> 117 of 334, external 70 -> 73 of 133,
# held-out 19 -> 19 of 60 (at 1,024: 82 -> 85, 45 -> 46, 10 -> 9; at 4,096: 152 -> 153,
# 94 -> 95, 33 -> 34). Anywhere from 0.15 to 0.35 measured the same.
USER_VALUE_WEIGHT = 0.25
# A code line naming something the message's prose names too: what the reply explained, not the
# scaffolding around it (on the dev set 21% of such lines hold an asked fact, 7% of the rest).
EXPLAINED_WEIGHT = 2.0
RECENCY_WEIGHT = 1.0  # the newest line is worth this much more than the oldest
# A line naming a constant, an environment variable or a config key in upper snake case
# (`WARM_IP_TARGET=5`, `CONFIG_SERIAL=n`, `#define HX711_NUM_SAMPLES 9`): a setting asked about
# again by its name. Such lines left out were the last missing piece of a fact 2.5-3 times as
# often as other lines left out, on the dev and held-out sets alike. No query, at 2,048 tokens:
# dev 113 -> 115 of 334, held-out 14 -> 19 of 60, external 70 -> 70 of 133 (at 1,024: 79 -> 82,
# 8 -> 10, 44 -> 46; at 4,096: 143 -> 152, 30 -> 33, 94 -> 94).
CONSTANT_WEIGHT = 2.0
_CONSTANT = re.compile(r"[A-Z]{2,}_[A-Z]")
# A topic keeps its newest key lines only: a render shows a few dozen, and a topic of 100,000
# messages held ~100,000 lines (memory, and ranking them all on each render with no query).
MAX_KEY_LINES = 2000
_COMMENT = re.compile(r"\s+(?://|#)\s.*$")
_SPACES = re.compile(r"\s{2,}")
# a flag is a whole word (`--force`), not a decrement (`--live_;`)
_LITERAL = re.compile(r"\d|\"[^\"]+\"|'[^']+'|`[^`]+`|(?<![\w-])--?[a-z][\w-]+(?![\w;-])|\w/\w")
MIN_LETTERS = 4
# A key that opens a block states nothing yet (`"tags": {`, `env:`, `ports = [`): what it holds
# is on the lines after it. Read as a value (the quoted key), such lines took the room of facts.
# (No query, 2,048 tokens: dev 116 -> 118 of 334; 4,096: 151 -> 152; 1,024 tokens, external and
# held-out unchanged; with a query no change.)
_OPENS_BLOCK = re.compile(r"""\s*["']?[\w.-]+["']?\s*[:=]\s*[\[{(]?\s*$""")
# A code line of logic or of a query states how, not what is set: a loop, a branch, a return
# (`for (int i = 0; i < n; ++i)`, `if (chunk.count == 0) continue;`, `return HttpResponse(
# status=400)`), a query's clause (`order by 2 desc;`, `limit 25;`, not a `limit = 300` key).
# Their numbers read as values.
# (No query: dev 118 -> 119 of 334 at 2,048 tokens, 152 -> 155 at 4,096, 84 -> 83 at 1,024;
# held-out 19 -> 20, 9 -> 10 and 34 -> 33 of 60; external unchanged; with a query no change.)
_CONTROL = "return|if|elif|else|while|for|case"  # words that start logic, not a declaration
_LOGIC = re.compile(
    rf"\s*(?:(?:{_CONTROL})\b[ (]|(?i:(?:limit|offset)\s+\d|(?:group by|order by|having)\b))"
)
# A declaration: qualifiers and a type before the name it sets (`static constexpr uint32_t
# kIndexBits = 22;`, `pub const EXIT_PARTIAL: u8 = 3;`). Its name and value are the fact, at
# half the tokens, and a later declaration of the same name replaces it as a setting does.
_DECLARATION = re.compile(
    rf"^(?!(?:{_CONTROL}|yield|await|assert)\b)"
    r"(?:[\w:<>\[\]*&]+\s+)+?(?P<name>[A-Za-z_]\w*)\s*(?::\s*[\w:<>\[\]&*, ]+?)?\s*"
    r"=\s*(?P<value>[^=\s].*?)\s*;?$"
)
_SETTING = re.compile(r"^\s*([\w.\-\[\]\"']+)\s*[:=]")
# Words that join, count or qualify things but name none: "per frame", "every hour" or "whole
# executor" is no subject. (The embedding keeps them: they still tell messages apart.)
FILLER = frozenset(
    """
    per via plus each every without within across along among around behind beside besides
    beyond despite except inside outside onto toward towards upon versus whether though
    although since unless instead rather already again even much many less fewer another
    either neither both any same several few lot lots least last next first new old whole
    three four five six seven eight nine ten big small large whose really actually probably
    basically quite pretty well back always never often sometimes usually here there look
    looks thing things stuff way ways something anything everything nothing bit kind sort
    different similar separate current previous specific actual proper simple extra entire
    certain various usual possible
    """.split()
)
_ADVERB = re.compile(
    r"\w{3,}(?:ate|ent|ant|ous|ive|ful|al|ing|ed|ab|ib|ct|ss|r|t)ly$"
)  # "legitimately"
DETERMINERS = frozenset("the a an this that our your its their".split())
NOUN_MARK = "the "  # never starts a two-word phrase: "the" is a stopword


@dataclass(frozen=True, slots=True)
class KeyLine:
    text: str
    message_id: int
    position: int
    assistant: bool
    names: int  # how many distinct things it names
    terms: tuple[str, ...]
    setting: str | None  # the name it assigns, if it is a `name = value` line
    explained: bool = False  # a code line naming something its message's prose names
    constant: bool = False  # it names an upper snake case constant (`CONSTANT_WEIGHT`)
    path: bool = False  # a file path its message's prose names, not a line of the message


@lru_cache(maxsize=1024)  # an offline title reads a topic's newest messages at each summary
def phrases(text: str) -> frozenset[str]:
    """Two-word phrases of the prose of `text` ("rate limiting", "connection pool"): what a
    person would call the subject, where identifiers name its parts. Also "the arena"
    (`NOUN_MARK`) for a word said after an article or a possessive: used as a noun, as the
    last word of a phrase that names a subject is ("frame arena", not "deployment goes")."""
    found: set[str] = set()
    for passage in split_passages(text):
        if passage.code:
            continue
        words = [w.strip(".,;:!?()\"'") for w in passage.text.split()]  # path parts are no words
        for first, second in itertools.pairwise(words):
            if not _plain(second):
                continue
            if _plain(first):
                found.add(f"{first.lower()} {second.lower()}")
            elif first.lower() in DETERMINERS:
                found.add(NOUN_MARK + second.lower())
    return frozenset(found)


def nouns(phrases: Iterable[str]) -> set[str]:
    """The words `phrases` (of `phrases()`) says were used as nouns."""
    return {p[len(NOUN_MARK) :] for p in phrases if p.startswith(NOUN_MARK)}


def _plain(word: str) -> bool:
    return (
        len(word) >= 3
        and word.isalpha()
        and word.lower() not in STOPWORDS
        and word.lower() not in FILLER
        and not _ADVERB.match(word.lower())
        and (word.islower() or word.istitle())
    )


def states_a_value(text: str) -> bool:
    """A line that sets or names something concrete: a number, a quoted string, a flag or a
    path, in a line with words around it (not `if err != nil {`, a bare `1.` or a key that
    opens a block)."""
    if _OPENS_BLOCK.match(text):
        return False
    return (
        VALUE.search(text) is not None
        and _LITERAL.search(text) is not None
        and sum(c.isalpha() for c in text) >= MIN_LETTERS
    )


def key_lines(message: Message) -> list[KeyLine]:
    """The lines of one message that state a value, trimmed; and the file paths its other
    prose names, each as a line of its own (where a file lives is a fact asked about again,
    and a long sentence, or one that states no value, is never a key line itself)."""
    out: list[KeyLine] = []
    paths: set[str] = set()
    assistant = message.role != "user"
    passages = split_passages(message.content)
    # what the prose names, for telling the code lines it explains (no code: nothing to tell)
    prose_names: set[str] = set()
    if any(p.code for p in passages):
        prose_names = {n for p in passages if not p.code for n in entities(p.text)}
    for position, passage in enumerate(passages):
        text = _SPACES.sub(" ", _COMMENT.sub("", passage.text)).strip()
        if not text:
            continue
        # (a long line is never a key line, and the pattern's cost grows with its square)
        short = len(text) <= MAX_LINE_CHARS
        declared = _DECLARATION.match(text) if passage.code and short else None
        if declared:
            text = f"{declared['name']} = {declared['value']}"
        logic = passage.code and _LOGIC.match(text) is not None
        if short and not logic and states_a_value(text):  # (a declaration only got shorter)
            setting = _SETTING.match(text)
            names = set(entities(text))
            out.append(
                KeyLine(
                    text=text,
                    message_id=message.id,
                    position=position,
                    assistant=assistant,
                    names=len(names),
                    terms=tuple(extract_terms(text)),
                    setting=setting.group(1).lower() if setting else None,
                    explained=passage.code
                    and any(len(name) >= MIN_LETTERS and name in prose_names for name in names),
                    constant=_CONSTANT.search(text) is not None,
                )
            )
        elif not passage.code:
            for path in _folder_paths(text, paths):
                terms = tuple(extract_terms(path))
                out.append(
                    KeyLine(path, message.id, position, assistant, 1, terms, None, path=True)
                )
    return out


def _folder_paths(text: str, seen: set[str]) -> list[str]:
    """The paths with a folder (`src/vs/editor/tabs.ts`, not `tabs.ts`: a name alone is in the
    title and summary already) that `text` names and `seen` does not hold yet; adds them."""
    found = [
        name
        for name in dict.fromkeys(entities(text))
        if "/" in name and name not in seen and is_file_path(name) and _named_as_path(name, text)
    ]
    seen.update(found)
    return found


def _named_as_path(name: str, text: str) -> bool:
    """Whether `name` reads as a path in `text`: a file (`app/db.py`), a deeper or rooted path
    (`src/vs/editor`, `/etc/nginx`), or two words quoted as code (`` `internal/store` ``); two words
    said with a slash in prose are mostly a pair ("add/remove", "TX/RX", "Honor/EMUI"): 54 of
    the 90 two-word path lines that renders with no query showed (dev and held-out sets) were
    never quoted, nearly all of them pairs (a few folders, `db/migrations`, are lost too).
    (No query, 2,048 tokens: dev 124 -> 123 of 334, external 73 -> 75 of 133, held-out 52.)"""
    last = name.rstrip("/").rsplit("/", 1)[-1]
    if "." in last.strip(".") or name.count("/") >= 2 or name[0] in "./~":
        return True
    return re.search(rf"`[^`\n]*{re.escape(name)}[^`\n]*`", text) is not None


@dataclass
class KeyLineState:
    """A topic's key lines collected so far, from its first `done` members (`collected`); the
    newest `MAX_KEY_LINES` are kept. Members that leave (re-clustering moves an exchange out of
    the middle of a list) are taken back out (`resume`) rather than the topic collected again
    from its start: at 100,000 messages that re-read thousands of messages in every window
    after each move."""

    lines: list[KeyLine] = field(default_factory=list)
    phrases: Counter[str] = field(default_factory=Counter)  # two-word phrases, per message
    added: int = 0  # lines ever added: with the IDF epoch, what a ranking was made from
    collected: list[int] = field(default_factory=list)  # the members collected, in list order
    # The last ranking: (added, epoch), the ranking, and the lines' terms the IDF did not know
    # then (between epochs the IDF only learns new terms; one of these could change a score).
    _ranked: tuple[tuple[int, int], Ranking, frozenset[str]] | None = None
    # The last pick, with the ranking and arguments it was made from: a render with no query
    # picks every topic's lines again though nothing changed (the tree's "what the model
    # sees", each window after another's turn).
    _picked: tuple[Ranking, tuple[int, str, frozenset[str]], list[KeyLine]] | None = None

    @property
    def done(self) -> int:
        return len(self.collected)

    def add(self, message: Message) -> None:
        found = key_lines(message)
        self.lines += found
        self.added += len(found)
        if len(self.lines) > MAX_KEY_LINES:
            del self.lines[: len(self.lines) - MAX_KEY_LINES]
        self.phrases.update(phrases(message.content))
        self.collected.append(message.id)

    def continues(self, members: list[int]) -> bool:
        """Whether `members` is what was collected and maybe more after it."""
        done = self.done
        return done <= len(members) and (not done or members[done - 1] == self.collected[-1])

    def resume(
        self, members: list[int], read: Callable[[list[int]], list[Message]], most: int
    ) -> bool:
        """Take out what members that left the topic added (read again with `read`), so that
        collection goes on from the ones still in `members`; False (nothing changed) if that
        is not how `members` differs (none left, over `most` left, or reordered): start again."""
        changes = list_changes(self.collected, members)
        if changes is None or not changes[0] or len(changes[0]) > most:
            return False
        gone, appended = changes
        messages = read(gone)
        gone_ids = set(gone)
        self.lines = [line for line in self.lines if line.message_id not in gone_ids]
        for message in messages:
            for phrase in phrases(message.content):
                left = self.phrases[phrase] - 1
                if left > 0:
                    self.phrases[phrase] = left
                else:
                    del self.phrases[phrase]
        self.collected = members[: len(members) - len(appended)]  # the ones still there
        self._ranked = None
        return True

    def ranking(self, idf: Mapping[str, float], epoch: int, count: TokenCounter) -> Ranking:
        """`rank` of the lines, remembered until a line is added or the IDF changes: renders
        with no query (and upkeep, which warms it when idle) pick from it without scoring every
        line."""
        cached = self._ranked
        if cached is None or not self.ranked(idf, epoch):
            unknown = frozenset(t for line in self.lines for t in line.terms if t not in idf)
            cached = self._ranked = ((self.added, epoch), rank(self.lines, idf, count), unknown)
        return cached[1]

    def pick(self, ranking: Ranking, room: int, skip: str, said: AbstractSet[str]) -> list[KeyLine]:
        """`pick(ranking, …)`, remembered for the same ranking and arguments."""
        key = (room, skip, frozenset(said))
        last = self._picked
        if last is None or last[0] is not ranking or last[1] != key:
            last = self._picked = (ranking, key, pick(ranking, room, skip, said))
        return list(last[2])

    def ranked(self, idf: Mapping[str, float], epoch: int) -> bool:
        """Whether the remembered ranking is current."""
        cached = self._ranked
        return (
            cached is not None
            and cached[0] == (self.added, epoch)
            and not any(t in idf for t in cached[2])
        )


@dataclass(frozen=True, slots=True)
class Ranking:
    """Key lines best first by worth per token, with their costs; `least[i]`: the smallest
    cost from position i on (picking stops once nothing left can fit); `worths[i]`: line i's
    worth per token; `weights[i]`: the IDF of each of its terms (what it tells)."""

    lines: tuple[KeyLine, ...]
    costs: tuple[int, ...]
    least: tuple[int, ...]
    worths: tuple[float, ...] = ()
    weights: tuple[dict[str, float], ...] = ()
    totals: tuple[float, ...] = ()  # the sum of each line's `weights`


def rank(lines: list[KeyLine], idf: Mapping[str, float], count: TokenCounter) -> Ranking:
    """The lines `pick` chooses from, best first (a line whose setting is stated again later
    is left out, unless its name is a block attribute)."""
    if not lines:
        return Ranking((), (), ())
    newest = max(line.message_id for line in lines) or 1
    oldest = min(line.message_id for line in lines)
    # A name set twice in one message is a block's attribute (`name`, `type`, `cpu` of each
    # resource in an HCL or YAML file), not one setting: a later `name = …` is another thing's.
    per_message = Counter((line.message_id, line.setting) for line in lines if line.setting)
    attributes = {setting for (_, setting), times in per_message.items() if times > 1}
    latest_setting: dict[str, tuple[int, int]] = {}
    for line in lines:
        if line.setting and line.setting not in attributes:
            key = (line.message_id, line.position)
            latest_setting[line.setting] = max(latest_setting.get(line.setting, key), key)
    ranked = []
    for line in lines:
        latest = latest_setting.get(line.setting) if line.setting else None
        if latest is not None and latest != (line.message_id, line.position):
            continue  # stated again later: the later value is the current one
        specificity = sum(idf.get(t, 0.0) for t in line.terms) / (1 + len(line.terms))
        age = (line.message_id - oldest) / max(1, newest - oldest)
        worth = (line.names + specificity) * (1 + RECENCY_WEIGHT * age)
        worth *= ASSISTANT_WEIGHT if line.assistant else 1.0
        worth *= USER_VALUE_WEIGHT if not (line.assistant or line.path) else 1.0
        worth *= EXPLAINED_WEIGHT if line.explained else 1.0
        worth *= CONSTANT_WEIGHT if line.constant else 1.0
        cost = count(line.text) + 1
        ranked.append((worth / cost, line, cost))
    ranked.sort(key=lambda item: -item[0])
    least = [0] * len(ranked)
    smallest = 1 << 62
    for position in range(len(ranked) - 1, -1, -1):
        smallest = min(smallest, ranked[position][2])
        least[position] = smallest
    weights = tuple({t: idf.get(t, 0.0) for t in line.terms} for _, line, _ in ranked)
    return Ranking(
        tuple(line for _, line, _ in ranked),
        tuple(cost for _, _, cost in ranked),
        tuple(least),
        tuple(worth for worth, _, _ in ranked),
        weights,
        tuple(sum(w.values()) for w in weights),
    )


def pick(
    ranking: Ranking, room: int, skip: str = "", said: AbstractSet[str] = frozenset()
) -> list[KeyLine]:
    """The best lines of a ranking within `room` tokens, in conversation order, not repeating
    `skip` (text the reader sees anyway: a summary) or a line of `said` (lowercased: shown by
    another topic; a line shared by several topics, such as a common setting, says its fact
    once).

    A line is worth what it tells that the lines chosen before it (and `skip`) do not: its
    worth shrinks with the share of its terms' weight already shown. Five lines naming the
    same file and function are one fact said five times; with no question to answer, the room
    is better spent on the names and values nothing else shows (lazy greedy: a worth only
    ever shrinks, so a line whose updated worth still leads is the best)."""
    if room <= 0:
        return []
    covered = set(extract_terms(skip)) if skip else set()
    lowered_skip = skip.lower()
    worths, least = ranking.worths, ranking.least
    size = len(worths)
    # Lines are read in ranking order (best first); a line whose worth fell waits in `fallen`
    # to be compared again. Reading stops once the lines left in order cannot fit: at 10,000
    # messages a topic ranks ~2,000 lines, and heaping them all cost ~4 ms of a 10 ms render
    # with no query (the rest, re-scoring, is spared by `KeyLineState.pick` keeping its pick).
    fallen: list[tuple[float, int]] = []
    ahead = 0  # the next line in ranking order
    chosen: list[KeyLine] = []
    texts: set[str] = set()
    used = 0

    def best_left() -> tuple[float, int] | None:
        fresh = (-worths[ahead], ahead) if ahead < size else None
        if fallen and (fresh is None or fallen[0] < fresh):
            return fallen[0]
        return fresh

    while size and used + least[0] <= room:
        if ahead < size and used + least[ahead] > room:
            ahead = size  # none of the rest in order fits
        top = best_left()
        if top is None:
            break
        i = top[1]
        if i == ahead:
            ahead += 1
        else:
            heapq.heappop(fallen)
        line, cost = ranking.lines[i], ranking.costs[i]
        if used + cost > room:
            continue
        lowered = line.text.lower()
        if lowered in texts or lowered in said or lowered in lowered_skip:  # said already
            continue
        weights, total = ranking.weights[i], ranking.totals[i]
        new = sum(w for t, w in weights.items() if t not in covered)
        worth = worths[i] * (new / total if total > 0 else 1.0)
        top = best_left()
        if top is not None and worth < -top[0] - 1e-12:
            heapq.heappush(fallen, (-worth, i))  # its worth fell: compare it again later
            continue
        if worth <= 0:
            continue
        chosen.append(line)
        texts.add(lowered)
        covered.update(weights)
        used += cost
    return sorted(chosen, key=lambda line: (line.message_id, line.position))
