"""The protocol table's vocabulary (a method, a param) and how params are checked against it.

`protocol.py` is the table written in it; `rpc` checks each request's params with `validate`
(errors name the field, as InvalidParams).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from topicforest.attachments import KINDS, Attachment
from topicforest.workspace.keys import ApiKey
from topicforest.workspace.settings import check_api_base

INVALID_PARAMS = -32602
MAX_TEXT = 200_000  # characters in a chat message or query (the engine's message limit)
MAX_URI = 4096
MAX_LANGUAGE = 100  # characters in an attachment's language id
MAX_LINE = 100_000_000  # a line number
MAX_KEY = 4096  # characters in an API key
PROVIDER = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")  # litellm's provider names


class ProtocolError(Exception):
    """A documented JSON-RPC error (`rpc` hands it to pygls, which sends it as the response).

    Not pygls' own exception class: this module is imported before pygls is (see `early`).
    """

    def __init__(self, code: int, message: str, data: Any | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid_params(name: str, problem: str) -> ProtocolError:
    return ProtocolError(INVALID_PARAMS, f"{name}: {problem}", {"field": name})


Kind = Literal["string", "integer", "boolean", "number", "array"]
PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "number": (int, float),
    "array": (list, tuple),
}


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    required: bool = False
    default: Any = None
    doc: str = ""
    max_length: int | None = None  # strings
    min_length: int | None = None
    minimum: int | None = None  # integers
    maximum: int | None = None
    nullable: bool = False
    items: str | None = None  # arrays: the shape of their items (the table's type is items[])
    max_items: int | None = None
    parse: Callable[[str, Any], Any] | None = None  # arrays: checks and types each item


@dataclass(frozen=True)
class Method:
    name: str
    kind: Literal["request", "notification"]
    direction: Literal["clientToServer", "serverToClient"]
    doc: str
    params: tuple[Param, ...] = ()
    result: dict[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    # answered by `early` (before pygls is loaded) from the workspaces alone: read-only
    # requests and notifications whose handlers need no pygls
    early: bool = False


def validate(method: Method, raw: object) -> dict[str, Any]:
    """Typed params with defaults applied; raises InvalidParams naming the offending field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise invalid_params("params", f"must be an object, not {_json_type(raw)}")
    out: dict[str, Any] = {}
    for param in method.params:
        value = raw.get(param.name)
        if value is None:
            if param.required:
                raise invalid_params(param.name, "is required")
            out[param.name] = param.default
            continue
        out[param.name] = _check(param, value)
    return out


def _check(param: Param, value: object) -> Any:
    if isinstance(value, bool) and param.kind != "boolean":
        raise invalid_params(param.name, f"must be {_article(param.kind)}, not a boolean")
    if isinstance(value, float) and param.kind == "integer" and value.is_integer():
        value = int(value)  # some clients send 3.0
    if not isinstance(value, PY_TYPES[param.kind]):
        raise invalid_params(param.name, f"must be {_article(param.kind)}, not {_json_type(value)}")
    if isinstance(value, str) and not _encodable(value):
        raise invalid_params(param.name, "must be valid Unicode text (it holds a lone surrogate)")
    if isinstance(value, str) and param.max_length is not None and len(value) > param.max_length:
        raise invalid_params(
            param.name, f"is {len(value)} characters long; the limit is {param.max_length}"
        )
    if isinstance(value, str) and param.min_length is not None and len(value) < param.min_length:
        raise invalid_params(param.name, "must not be empty")
    if isinstance(value, list | tuple):
        if param.max_items is not None and len(value) > param.max_items:
            limit = param.max_items
            raise invalid_params(param.name, f"has {len(value)} items; the limit is {limit}")
        if param.parse is not None:
            return [param.parse(f"{param.name}[{i}]", item) for i, item in enumerate(value)]
        return list(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if param.minimum is not None and value < param.minimum:
            raise invalid_params(param.name, f"must be at least {param.minimum}")
        if param.maximum is not None and value > param.maximum:
            raise invalid_params(param.name, f"must be at most {param.maximum}")
        if abs(value) > 2**53:
            raise invalid_params(param.name, "is out of range")
    return value


def parse_attachment(name: str, raw: object) -> Attachment:
    """One chat attachment, checked field by field (errors name `attachments[2].path`)."""
    if not isinstance(raw, Mapping):
        raise invalid_params(name, f"must be an object, not {_json_type(raw)}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise invalid_params(f"{name}.kind", f"must be one of {', '.join(KINDS)}")
    path = _check(Param(f"{name}.path", "string", max_length=MAX_URI), raw.get("path"))
    if not path.strip():
        raise invalid_params(f"{name}.path", "must not be empty")
    text = _check(Param(f"{name}.text", "string", max_length=MAX_TEXT), raw.get("text"))
    language = raw.get("language")
    if language is not None:
        language = _check(Param(f"{name}.language", "string", max_length=MAX_LANGUAGE), language)
    return Attachment(kind, path, text, _line_range(f"{name}.range", raw.get("range")), language)


def parse_api_key(name: str, raw: object) -> ApiKey:
    """One API key from the client (`setApiKeys`); no error text ever quotes the key."""
    if not isinstance(raw, Mapping):
        raise invalid_params(name, f"must be an object, not {_json_type(raw)}")
    provider = raw.get("provider")
    if not isinstance(provider, str) or not PROVIDER.match(provider):
        raise invalid_params(f"{name}.provider", "must be a provider name such as anthropic")
    base = raw.get("apiBase") or None
    if base is not None:
        base = _check(Param(f"{name}.apiBase", "string", max_length=MAX_URI), base)
        try:
            check_api_base(base)
        except ValueError as exc:
            raise invalid_params(f"{name}.apiBase", str(exc)) from exc
    key = raw.get("apiKey")
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY:
        raise invalid_params(f"{name}.apiKey", f"must be a string of 1 to {MAX_KEY} characters")
    if not (key.isascii() and key.isprintable()) or any(c.isspace() for c in key):
        # it goes into an HTTP header: no line breaks, no spaces
        raise invalid_params(f"{name}.apiKey", "must be printable ASCII without spaces")
    return ApiKey(provider, base, key)


def _line_range(name: str, raw: object) -> tuple[int, int] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise invalid_params(name, f"must be an object, not {_json_type(raw)}")
    start, end = (
        _check(Param(f"{name}.{key}", "integer", minimum=0, maximum=MAX_LINE), raw.get(key))
        for key in ("startLine", "endLine")
    )
    if end < start:
        raise invalid_params(f"{name}.endLine", "must not be before startLine")
    return start, end


def _encodable(text: str) -> bool:
    """Whether `text` can be stored and sent as UTF-8 (JSON's \\ud800 escapes decode to lone
    surrogates, which SQLite and every encoder refuse)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Sequence):
        return "an array"
    return "an object"
