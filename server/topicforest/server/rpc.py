"""Registering custom methods: params validated against the protocol table, errors translated.

Handlers get `(server, params)` with params validated, defaulted and structured as the method's
`wire.<Verb>Params`, return its `wire.<Verb>Result`, and may raise engine or workspace
exceptions; this module turns those into the documented JSON-RPC errors in one place. A handler
whose annotations name other types than its method's is refused when it is registered
(`check_handler`).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from topicforest.engine import InvalidMessage, UnknownTopic
from topicforest.server import wire
from topicforest.server.protocol import (
    BY_NAME,
    CHAT_NOT_CONFIGURED,
    PREFIX,
    PROVIDER_ERROR,
    STORE_ERROR,
    UNKNOWN_TOPIC,
    UNKNOWN_WORKSPACE,
)
from topicforest.server.validation import Method, ProtocolError, invalid_params, validate
from topicforest.store.errors import ForeignThread, StoreError
from topicforest.workspace.errors import (
    ChatNotConfigured,
    NotRetryable,
    ProviderError,
    UnknownThread,
    UnknownWorkspace,
)
from topicforest.workspace.registry import Workspaces

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

log = logging.getLogger(__name__)
# The first argument is the server, or for handlers that only need the memories any `Host`;
# the second the method's `wire.<Verb>Params`.
Handler = Callable[[Any, Any], Any]


class Host(Protocol):
    """All that handlers of memory-only methods use: they also run before pygls is loaded."""

    workspaces: Workspaces


def translate(exc: Exception, params: dict[str, Any]) -> Exception:
    """The documented JSON-RPC error for an exception raised by the engine or a memory."""
    if isinstance(exc, UnknownTopic):
        return ProtocolError(UNKNOWN_TOPIC, str(exc), {"topicId": params.get("topicId")})
    if isinstance(exc, UnknownWorkspace):
        return ProtocolError(UNKNOWN_WORKSPACE, str(exc), {"workspaceUri": exc.uri})
    if isinstance(exc, InvalidMessage):
        return invalid_params("threadId" if "thread id" in str(exc) else "message", str(exc))
    if isinstance(exc, (UnknownThread, ForeignThread)):
        return invalid_params("threadId", str(exc))
    if isinstance(exc, NotRetryable):
        return invalid_params("retryOf", str(exc))
    if isinstance(exc, ChatNotConfigured):
        return ProtocolError(CHAT_NOT_CONFIGURED, str(exc), {"setting": "topicForest.chatModel"})
    if isinstance(exc, ProviderError):
        return ProtocolError(PROVIDER_ERROR, str(exc))
    if isinstance(exc, StoreError):
        return ProtocolError(STORE_ERROR, str(exc))
    return exc


def structure(method: Method, values: dict[str, Any]) -> Any:
    """Validated params as the method's `wire.<Verb>Params` (fields in the table's order)."""
    return wire.PARAMS[method.name](*(values[p.name] for p in method.params))


def check_handler(fn: Handler, method: Method) -> None:
    """Refuse a handler whose params (and, for a request, result) annotation is not the method's
    generated type: a handler and the table cannot disagree."""
    verb = method.name.removeprefix(PREFIX)
    verb = verb[0].upper() + verb[1:]
    signature = inspect.signature(fn)
    annotations = [str(p.annotation) for p in signature.parameters.values()]
    wanted = wire.PARAMS[method.name].__name__
    if len(annotations) != 2 or annotations[1].rpartition(".")[2] != wanted:
        raise TypeError(f"{fn.__qualname__} must take (server, {wanted}) for {method.name}")
    result = str(signature.return_annotation).rpartition(".")[2]
    if method.kind == "request" and result != f"{verb}Result":
        raise TypeError(f"{fn.__qualname__} must return {verb}Result for {method.name}")


def call(fn: Handler, ls: Any, method: Method, raw: object) -> Any:
    """Validate `raw`, run `fn`, translate its exception: the path of every custom request,
    whether pygls or `early` (before pygls is loaded) received it."""
    values = validate(method, raw)
    try:
        return fn(ls, structure(method, values))
    except Exception as exc:
        raise translate(exc, values) from exc


async def call_async(fn: Handler, ls: Any, method: Method, raw: object) -> Any:
    values = validate(method, raw)
    try:
        return await fn(ls, structure(method, values))
    except Exception as exc:
        raise translate(exc, values) from exc


def for_pygls(exc: ProtocolError) -> Exception:
    """The same error as pygls' exception class, which pygls sends as the response."""
    from pygls.exceptions import JsonRpcException  # loaded by then; this module must not load it

    return JsonRpcException(message=exc.message, code=exc.code, data=exc.data)


def request(server: TopicForestServer, name: str) -> Callable[[Handler], Handler]:
    """Register `fn(server, params)` as the handler of custom method `name`."""
    method = BY_NAME[name]

    def decorator(fn: Handler) -> Handler:
        check_handler(fn, method)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(ls: TopicForestServer, raw: object) -> Any:
                try:
                    return await call_async(fn, ls, method, raw)
                except ProtocolError as exc:
                    raise for_pygls(exc) from exc

            server.feature(name)(run_async)
        else:

            @functools.wraps(fn)
            def run(ls: TopicForestServer, raw: object) -> Any:
                try:
                    return call(fn, ls, method, raw)
                except ProtocolError as exc:
                    raise for_pygls(exc) from exc

            server.feature(name)(run)
        return fn

    return decorator


def notification(server: TopicForestServer, name: str) -> Callable[[Handler], Handler]:
    """Register a custom notification handler; bad params are logged (there is no reply)."""
    method = BY_NAME[name]

    def decorator(fn: Handler) -> Handler:
        check_handler(fn, method)

        @functools.wraps(fn)
        def run(ls: TopicForestServer, raw: object) -> None:
            try:
                fn(ls, structure(method, validate(method, raw)))
            except ProtocolError as exc:
                log.warning("ignored %s: %s", name, exc.message)

        server.feature(name)(run)
        return fn

    return decorator
