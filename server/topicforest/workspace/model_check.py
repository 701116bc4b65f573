"""Testing a model: one tiny request, and what went wrong in plain words.

The request goes the way a chat turn's would (the same route, keys and timeouts), and the
first words of the answer are proof enough: the stream is closed then. A failure is named
by what the user can do about it; the provider's own words follow, redacted and short.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Literal

from topicforest.workspace.chat_model import ChatModel
from topicforest.workspace.redact import short_error

Problem = Literal["noKey", "keyRefused", "unknownModel", "unreachable", "timeout", "failed"]
PROBE = [{"role": "user", "content": "Reply with the single word OK."}]
DETAIL_CHARS = 300
OUR_WRAPPERS = re.compile(r"^((ChatModelError|WorkerError|WorkerDeadline): )+")

# In order: the first that matches the error text names the problem.
WORDS: tuple[tuple[Problem, str], ...] = (
    (
        "noKey",
        r"(missing|no|set)\b[\w ]{0,30}\bapi[_ ]?key|api[_ ]?key\b[\w ]{0,40}"
        r"(must be set|not set|is required|missing)|api_key client option",
    ),
    (
        "keyRefused",
        r"\bHTTP 40[13]\b|AuthenticationError|PermissionDenied|invalid[_ ]api[_ ]key|"
        r"incorrect api key|invalid x-api-key|api key not valid|unauthori[sz]ed",
    ),
    (
        "unknownModel",
        r"NotFoundError|\bHTTP 404\b|model\b.{0,80}\b(not found|does not exist)|"
        r"unknown model|model_not_found|no such model|LLM Provider NOT provided|"
        r"invalid model",
    ),
    (
        "unreachable",
        r"cannot connect|connection refused|connect call failed|APIConnectionError|"
        r"name or service not known|nodename nor servname|getaddrinfo|name resolution|"
        r"connection error|network is unreachable|no route to host|server disconnected",
    ),
    ("timeout", r"no first byte|timeout|timed out"),
)
PATTERNS = [(problem, re.compile(words, re.IGNORECASE)) for problem, words in WORDS]


@dataclass(frozen=True)
class ModelCheck:
    model: str
    api_base: str | None
    ok: bool
    problem: Problem | None
    message: str  # plain words, for the user
    detail: str  # the provider's own, redacted and short ("" when it answered)


async def check_model(model: ChatModel) -> ModelCheck:
    """Send `model` one tiny request; never raises for what the provider or network did."""
    keyed = True
    try:
        route = await model.route()
        keyed = route.url is None or "Authorization" in route.headers
        async with contextlib.aclosing(model.stream(PROBE)) as pieces:
            async for delta, _ in pieces:
                if delta:
                    break  # it answers: enough
    except Exception as exc:  # whatever failed is the answer, in words
        text = short_error(exc)
        problem = classify(text, keyed)
        detail = OUR_WRAPPERS.sub("", text)[:DETAIL_CHARS]  # the provider's words, not our classes'
        return ModelCheck(
            model.model, model.api_base, False, problem, explain(problem, model), detail
        )
    return ModelCheck(model.model, model.api_base, True, None, f"{model.model} answered.", "")


def in_words(exc: BaseException, model: ChatModel) -> str:
    """A chat turn's failure as the user can act on it, the provider's words after (one line)."""
    detail = short_error(exc)
    return f"{explain(classify(detail), model)} ({' '.join(detail.split())})"


def classify(text: str, keyed: bool = True) -> Problem:
    """The problem an error text shows; a refusal of a request that carried no key is `noKey`."""
    found = (p for p, pattern in PATTERNS if pattern.search(text))
    problem: Problem = next(found, "failed")
    return "noKey" if problem == "keyRefused" and not keyed else problem


def explain(problem: Problem, model: ChatModel) -> str:
    name, base = model.model, model.api_base
    where = f" at {base}" if base else ""
    return {
        "noKey": f"No API key for {name}: enter one (Configure Model), or set the provider's "
        "key variable (for example OPENAI_API_KEY) where the editor starts.",
        "keyRefused": f"The API key was refused for {name}{where}: check that it is right and "
        "for this provider (Configure Model).",
        "unknownModel": f"The endpoint{where} does not know the model {name}: check its name "
        "(Configure Model lists the models a local server has).",
        "unreachable": f"Cannot reach the endpoint of {name}{where}: is the server running, "
        "and the URL right?",
        "timeout": f"{name} did not start answering in time{where}.",
        "failed": f"{name} failed{where}.",
    }[problem]
