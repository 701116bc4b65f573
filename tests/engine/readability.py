"""What makes a summary unreadable: a comma-separated keyword dump, a pasted line of code, log
noise, a continuation alone, a sentence run on into the next speaker's, markdown's marks.

Test helpers, applied to every summary a replay produces. A sentence may name code (in backticks
or bare: `app/db.py`, `QueuePool`, `pool_size=20`) as long as it is a sentence: a person's words
around the names, not a list of names or a line lifted out of a code block.
"""

from __future__ import annotations

import re

# A "name": one token with no spaces, in backticks or bare (a path, an identifier, a number).
_ITEM = r"(?:`[^`\n]{1,80}`|[^\s,`]{1,80})"
# Five or more names in a row separated only by commas ("MinIO, 4.5.4, src/cli.rs, ArgAction,
# --jobs"): a person lists a few things in a sentence, a keyword dump lists everything.
_RUN = re.compile(rf"(?<![\w`]){_ITEM}(?:,\s+(?:and\s+|or\s+)?{_ITEM}){{4,}}")
_LABELS = re.compile(r"\b(?:Also mentioned|Keywords|Names|Mentioned)\s*:", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])")
_SPEAKER = re.compile(r"^(?:I said|You said|I asked|I asked you|You answered|You suggested)\s*:\s*")
_WORD = re.compile(r"(?<![\w./:=@$-])[A-Za-z][a-z]+(?:'[a-z]+)?(?![\w(/=:.-]*[\w(/=])")
_KEYWORD_START = re.compile(
    r"^(?:let|const|var|fn|def|pub|func|return|import|from|class|struct|impl|use|#include|#\[|"
    r"@\w+|\$ |>>>|SELECT|INSERT|UPDATE|CREATE|ALTER|await|async|if|for|while|match)\b"
)
_CODE_LINE = re.compile(
    r"^(?://|#\s*[\w./-]+\.\w+$|--\s|\d\d:\d\d:\d\d|[\w.\"'-]*[_.\"][\w.\"'-]*:\s*\S*$|[\w.\"'-]+,$|\"[\w.-]+\":)"
)
_CODE_MARKS = re.compile(r"[;{}]\s*$|=>|->|::|\w\(|\)\s*[;{?]|^\s*[})\]]|\s=\s|\[\s*\d|\|\|")


def keyword_dump(text: str) -> str | None:
    """The first list of names in `text`, if any (a label such as "Also mentioned:", or five
    or more names separated only by commas)."""
    label = _LABELS.search(text)
    if label:
        return text[label.start() : label.start() + 80]
    run = _RUN.search(text)
    return run.group(0) if run else None


def code_line(text: str) -> str | None:
    """The first sentence of `text` that is a line of code rather than a sentence about it."""
    for sentence in sentences(text):
        if is_code(sentence):
            return sentence
    return None


def sentences(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        for sentence in _SENTENCE.split(line.strip()):
            sentence = sentence.strip()
            while (match := _SPEAKER.match(sentence)) is not None:
                sentence = sentence[match.end() :]
            if sentence:
                out.append(sentence)
    return out


def is_code(sentence: str) -> bool:
    """Code: what is left once inline `code` spans are taken out has hardly a word of prose and
    shows code's punctuation, or starts as code does (`let x = …`, `def f(`, `$ cargo …`)."""
    if sentence.startswith("|") and sentence.rstrip(".").endswith("|"):
        return True  # a markdown table's row
    prose = re.sub(r"`[^`]*`", " ", sentence)
    words = _WORD.findall(prose)
    if (_KEYWORD_START.match(sentence) or _CODE_LINE.match(sentence)) and len(words) < 6:
        return True
    marks = len(_CODE_MARKS.findall(prose))
    return marks > 0 and len(words) < 3 + 2 * marks


# A sentence about pasted code or a log ("You showed …", "I pasted …", "It also has …")
_ABOUT_CODE = re.compile(r"\b(?:You showed|I pasted)\b|^It also has\b")
# What such a sentence should never name: when a log line was written (`00:03:12.404`,
# `2024-03-25T14:02:11.904Z`), a record's fields (`pid=1` and `tid=3nl`), a hash in a name
# (`ledgerly-job-3f9a1c0d`), or the mark of a condensed paste.
_NOISE = re.compile(
    r"`(?:\d{4}-\d{2}-\d{2}T)?\d{1,2}:\d{2}:\d{2}[^`]*`"
    r"|`(?:pid|tid|jid|rows|width|loops|hit|read)=[^`]*`.*`(?:pid|tid|jid|rows|width|loops|hit|read)="
    r"|`[^`\s]*-(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}`"
    r"|more lines in the original"
)


def log_noise(text: str) -> str | None:
    """The first sentence about code or a log that names a log line's time, a record's field
    or a generated id, or that quotes the mark of a condensed paste."""
    for sentence in sentences(text):
        if _NOISE.search(sentence) and (
            _ABOUT_CODE.search(sentence) or "more lines in the original" in sentence
        ):
            return sentence
    return None


def stray_continuation(text: str) -> str | None:
    """The first "It also has …" that does not follow a sentence about the code it continues
    (alone it says nothing of what "it" is)."""
    previous = ""
    for sentence in sentences(text):
        if sentence.startswith("It also has") and not _ABOUT_CODE.search(previous):
            return sentence
        previous = sentence
    return None


# A sentence run on into the next one's speaker, with no stop between them: one that opened a
# block or a list ("… only logs: I said: replayed, …") or ended in code ("… `<LineChart>` You
# said: …"); or a code block's file label standing as a sentence.
_RUN_ON = re.compile(r"[:`\w]\s+(?:I said:|You said:|I pasted |You showed |I asked you about )")
_FILE_LABEL = re.compile(r"(?:^|(?<=[.!?]\s))\([^\s()]+[/.][^\s()]+\)(?=\s|$)")


def run_on(text: str) -> str | None:
    """The first place where the next sentence's speaker follows a sentence with no stop, or a
    file label "(app/db.py)" stands where a sentence should."""
    for pattern in (_RUN_ON, _FILE_LABEL):
        if (found := pattern.search(text)) is not None:
            return text[max(0, found.start() - 60) : found.end() + 20]
    return None


def markup(text: str) -> str | None:
    """Markdown's bold markers left in a summary's words ("Review notes**: describe …"), not in
    its code (`src/**`, between backticks)."""
    for line in text.splitlines():
        for at, part in enumerate(line.split("`")):
            if at % 2 == 0 and "**" in part:
                return part
    return None
