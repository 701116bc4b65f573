"""litellm in a worker process: the server process never imports it.

Importing litellm takes seconds and ~315,000 objects. Done in a thread of the server (as it was),
it held the interpreter lock in the first seconds after start, and its garbage collections ran
there too: chat turns 3-15 after start took p99 30-70 ms in the server instead of ~1 ms. So
everything litellm does for a workspace runs in one child process (`python -m
topicforest.workspace.llm_worker`): the model's input window, the route of a model string that
names no endpoint, topic summaries (the offline ones too: their CPU work in a thread of the
server held the interpreter lock a turn needed), and the chat stream of a provider that is not
OpenAI-compatible. litellm is imported there on the first request that needs it (the server
asks for the model's window at `initialized`). The OpenAI-compatible chat path never needed
litellm at turn time (the route is resolved once, then `chat_model` streams with aiohttp in the
server).

Both ends are this module: requests and answers are pickled frames (a 4-byte length, then the
pickle) on the child's stdin and stdout; the child's fd 1 is pointed at stderr first, so
nothing litellm prints can break a frame. Requests run concurrently in the child. The child
exits when its stdin closes (the server ended, however it ended).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

# Everything the child's requests use is imported here, before it serves: requests run in
# threads (and unpickling a request imports its classes' modules), so an import made there could
# meet a module another thread is importing, half initialized (it did: ImportError in the child).
from topicforest.engine.llm import load_litellm, max_input_tokens, provider_kwargs
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.workspace.keys import NO_KEYS, ApiKeys

log = logging.getLogger(__name__)
HEADER = struct.Struct(">I")


def neutral_directory() -> str:
    """Where the child runs: never the workspace. With `-I` (isolated: no current directory,
    PYTHON* variables or user site on sys.path) a cloned repository's `litellm/` or `topicforest/`
    is not imported in place of ours; outside it, nothing litellm reads relative to the current
    directory comes from the repository either."""
    return tempfile.gettempdir()


class WorkerError(Exception):
    """The child raised (the text is its exception's), is gone, or did not answer in time."""


class WorkerDeadline(WorkerError):
    """The child did not answer a request within its deadline."""


# A request unanswered this long makes us ask whether the child still serves at all: it must
# answer a ping (from its event loop, which never imports or computes) within PING_SECONDS,
# generous for a niced process on a loaded machine, or it is killed and the next request
# starts another. A child that is alive but slow keeps its requests until their own deadlines.
LIVENESS_SECONDS = 5.0
PING_SECONDS = 30.0
CALL_SECONDS = 120.0  # a request's deadline, unless it names its own (litellm's import included)


@dataclass
class _Waiting:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[tuple[str, Any]]
    process: subprocess.Popen[bytes] | None = None  # the child the request went to


# -- the server's side -------------------------------------------------------------------------
class LLMWorker:
    """The child process, started on first use. Its pipes are read by a thread of ours, not by
    an event loop, so one child serves every loop of this process (each test has its own).

    Every request has a deadline, and a silent child is checked for life (see LIVENESS_SECONDS):
    a request is always answered, with its result or a WorkerError. The child is known to be gone
    when its output ends (not when the system reports its exit, which can come later): what was
    sent to it is answered with an error then, and the next request starts another."""

    def __init__(self, liveness: float = LIVENESS_SECONDS, ping: float = PING_SECONDS) -> None:
        self.liveness = liveness
        self.ping = ping
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # starting the child, writing a frame, its end
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiting] = {}

    @property
    def pid(self) -> int | None:
        """The running child's process id."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def _write(
        self,
        frame: tuple[Any, ...],
        waiting: _Waiting | None = None,
        to: subprocess.Popen[bytes] | None = None,
    ) -> None:
        """Send a frame to the child `to`, or to the current one (started if there is none);
        `waiting` is registered with it under the same lock as the child's end, so either that
        end answers it or it goes to a new child. Blocks while the pipe is full: called in a
        thread, never on an event loop."""
        body = pickle.dumps(frame)
        with self._lock:
            process = self._process
            if to is not None and to is not process:
                raise ValueError("that litellm worker process has ended")
            if process is None or process.poll() is not None:
                process = self._process = subprocess.Popen(
                    [sys.executable, "-I", "-m", __name__],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    cwd=neutral_directory(),
                )
                threading.Thread(
                    target=self._read, args=(process,), name="llm-worker", daemon=True
                ).start()
            if waiting is not None:
                waiting.process = process
                self._waiting[frame[0]] = waiting
            assert process.stdin is not None
            # A full pipe to a stopped child blocks here, holding the lock, until `_check`
            # kills that child (without the lock): then the write fails and the lock is free.
            process.stdin.write(HEADER.pack(len(body)) + body)
            process.stdin.flush()

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        out = process.stdout
        try:
            while len(head := out.read(HEADER.size)) == HEADER.size:
                msg_id, kind, value = pickle.loads(out.read(HEADER.unpack(head)[0]))
                self._deliver(msg_id, (kind, value))
        except Exception:  # a garbled frame: this child is of no more use
            log.exception("the litellm worker process sent an unreadable frame")
        finally:
            with self._lock:
                if self._process is process:
                    self._process = None  # the next request starts another child
                ended = [i for i, w in self._waiting.items() if w.process is process]
            for msg_id in ended:
                self._deliver(msg_id, ("error", "the litellm worker process ended"))
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()  # reaped: no zombie

    def _deliver(self, msg_id: int, item: tuple[str, Any]) -> None:
        waiting = self._waiting.get(msg_id)
        if waiting is not None:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                waiting.loop.call_soon_threadsafe(waiting.queue.put_nowait, item)

    async def _send(self, op: str, args: tuple[Any, ...]) -> tuple[int, _Waiting]:
        msg_id = next(self._ids)
        waiting = _Waiting(asyncio.get_running_loop(), asyncio.Queue())
        # the environment with each request: keys and proxies as the server sees them now
        frame = (msg_id, op, args, dict(os.environ))
        try:
            await asyncio.to_thread(self._write, frame, waiting)
        except (OSError, ValueError) as exc:
            self._waiting.pop(msg_id, None)
            raise WorkerError(f"the litellm worker process is gone: {exc}") from exc
        return msg_id, waiting

    async def _next(self, op: str, waiting: _Waiting, seconds: float) -> tuple[str, Any]:
        """The next answer to a request within `seconds`; a child silent for `liveness` seconds
        meanwhile must answer a ping, or is killed (and the request answered by its end)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (left := deadline - loop.time()) > 0:
            try:
                async with asyncio.timeout(min(left, self.liveness)):
                    return await waiting.queue.get()
            except TimeoutError:
                if waiting.queue.empty() and waiting.process is not None:
                    await self._check(waiting.process)
        raise WorkerDeadline(f"the litellm worker did not answer {op!r} within {seconds:g} s")

    async def _check(self, process: subprocess.Popen[bytes]) -> None:
        """Kill `process` unless it answers a ping within `self.ping` seconds."""
        if process is not self._process:
            return  # already ended: its requests are being answered
        msg_id = next(self._ids)
        waiting = _Waiting(asyncio.get_running_loop(), asyncio.Queue())
        try:
            async with asyncio.timeout(self.ping):
                await asyncio.to_thread(self._write, (msg_id, "ping", (), None), waiting, process)
                await waiting.queue.get()
                if waiting.process is process:
                    return
        except (TimeoutError, OSError, ValueError):
            pass
        finally:
            self._waiting.pop(msg_id, None)
        if waiting.process is process:
            log.warning("the litellm worker process %s does not answer: ended", process.pid)
            with contextlib.suppress(OSError):
                process.kill()  # its output ends: the reader answers what was sent to it

    async def call(self, op: str, *args: Any, seconds: float = CALL_SECONDS) -> Any:
        """The result of `op(*args)` in the child; WorkerError if it raised, is gone, or has
        not answered within `seconds`."""
        msg_id, waiting = await self._send(op, args)
        try:
            kind, value = await self._next(op, waiting, seconds)
        except BaseException:
            self._cancel(msg_id, waiting)
            raise
        finally:
            self._waiting.pop(msg_id, None)
        if kind == "error":
            raise WorkerError(value)
        return value

    async def stream(
        self, op: str, *args: Any, first: float = CALL_SECONDS, total: float = CALL_SECONDS
    ) -> AsyncIterator[Any]:
        """The items `op(*args)` yields in the child, as they come: the first within `first`
        seconds, the end within `total`."""
        msg_id, waiting = await self._send(op, args)
        ended = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + total
        seconds = min(first, total)
        try:
            while True:
                kind, value = await self._next(op, waiting, seconds)
                seconds = deadline - loop.time()
                if kind == "error":
                    ended = True
                    raise WorkerError(value)
                if kind == "end":
                    ended = True
                    return
                yield value
        finally:
            self._waiting.pop(msg_id, None)
            if not ended:  # the reader stopped early, or a deadline passed: stop the child's too
                self._cancel(msg_id, waiting)

    def _cancel(self, msg_id: int, waiting: _Waiting) -> None:
        """Tell the child a request went to that it may stop (from a thread: the pipe may be
        full); nothing if that child has ended."""
        if waiting.process is None:
            return
        frame = (next(self._ids), "cancel", (msg_id,), None)

        def write() -> None:
            with contextlib.suppress(OSError, ValueError):
                self._write(frame, None, waiting.process)

        threading.Thread(target=write, name="llm-worker-cancel", daemon=True).start()

    async def close(self) -> None:
        """End the child (it exits once its stdin closes)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None and process.poll() is None:
            assert process.stdin is not None
            with contextlib.suppress(OSError):
                process.stdin.close()
            try:
                await asyncio.to_thread(process.wait, 5)
            except subprocess.TimeoutExpired:
                process.kill()


WORKER = LLMWorker()  # one per server process, shared by its workspaces


# -- the child's side --------------------------------------------------------------------------
def _extract(request: Any) -> Any:
    return ExtractiveSummarizer().summarize_now(request)


def _window(model: str) -> int | None:
    return max_input_tokens(model)


def litellm_provider(
    model: str, api_base: str | None
) -> tuple[str, str, str | None, str | None] | None:
    """litellm's (name, provider, key, base) for a model string; None if it knows none."""
    litellm = load_litellm()
    try:
        name, provider, key, base = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception:  # litellm will explain it when the call is made
        return None
    return name, provider, key, base


def client_key(model: str, api_base: str | None, keys: ApiKeys) -> str | None:
    """The key the client gave for the provider litellm finds for `model` (imports litellm)."""
    if not keys.entries:
        return None
    found = litellm_provider(model, api_base)
    return keys.find(found[1], api_base) if found else None


async def _summarize(
    model: str, api_base: str | None, timeout: float, request: Any, keys: ApiKeys = NO_KEYS
) -> Any:
    await asyncio.to_thread(load_litellm)  # seconds, off this loop: it answers pings meanwhile
    key = client_key(model, api_base, keys)
    summarizer = LiteLLMSummarizer(model, api_base=api_base, timeout=timeout, api_key=key)
    return await summarizer.summarize(request)


async def litellm_stream(
    model: str,
    api_base: str | None,
    timeout: float,
    messages: list[dict[str, str]],
    keys: ApiKeys = NO_KEYS,
) -> AsyncIterator[tuple[str | None, tuple[int, int] | None]]:
    """A chat reply through `litellm.acompletion`: (text delta, (prompt, completion) tokens).

    Complete only if the provider said its reply finished: a stream that ends without (cut by
    the provider or a proxy, or garbage litellm skipped) raises, as on the direct path
    (`chat_model`). litellm's own last chunk always carries a finish reason, so what the
    provider sent is read from its stream wrapper (`received_finish_reason`)."""
    litellm = await asyncio.to_thread(load_litellm)  # off this loop: it answers pings meanwhile
    stream = await litellm.acompletion(
        model=model,
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        timeout=timeout,
        num_retries=0,
        **provider_kwargs(model, api_base, client_key(model, api_base, keys)),
    )
    try:
        async for chunk in stream:
            delta = chunk.choices[0].delta.content if chunk.choices else None
            usage = getattr(chunk, "usage", None)
            tokens = (
                (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
                if usage
                else None
            )
            yield delta, tokens
        if getattr(stream, "received_finish_reason", None) is None:
            raise IncompleteStream("the stream ended before the reply was complete")
    finally:
        with contextlib.suppress(Exception):  # never hide why the stream ended
            await asyncio.shield(stream.aclose())


class IncompleteStream(Exception):
    """The provider's stream ended without finishing its reply."""


CALLS: dict[str, Callable[..., Any]] = {
    "window": _window,
    "provider": litellm_provider,
    "extract": _extract,
}
ASYNC_CALLS: dict[str, Callable[..., Any]] = {"summarize": _summarize}
STREAMS: dict[str, Callable[..., AsyncIterator[Any]]] = {"chat": litellm_stream}


class Child:
    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.tasks: dict[int, asyncio.Task[None]] = {}

    def send(self, msg_id: int, kind: str, value: Any) -> None:
        try:
            body = pickle.dumps((msg_id, kind, value))
        except Exception as exc:  # an unpicklable result or exception
            body = pickle.dumps((msg_id, "error", f"{type(exc).__name__}: {exc}"))
        self.out.write(HEADER.pack(len(body)) + body)
        self.out.flush()

    async def run(self, msg_id: int, op: str, args: tuple[Any, ...]) -> None:
        try:
            if op in STREAMS:
                async for item in STREAMS[op](*args):
                    self.send(msg_id, "item", item)
                self.send(msg_id, "end", None)
            elif op in ASYNC_CALLS:
                self.send(msg_id, "result", await ASYNC_CALLS[op](*args))
            else:
                self.send(msg_id, "result", await asyncio.to_thread(CALLS[op], *args))
        except asyncio.CancelledError:
            self.send(msg_id, "end", None)
        except Exception as exc:
            self.send(msg_id, "error", f"{type(exc).__name__}: {exc}")
        finally:
            self.tasks.pop(msg_id, None)

    async def serve(self, stdin: BinaryIO) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readexactly(HEADER.size)
                frame = await reader.readexactly(HEADER.unpack(head)[0])
                msg_id, op, args, env = pickle.loads(frame)
                if env is not None and env != os.environ:
                    os.environ.clear()
                    os.environ.update(env)
                if op == "ping":  # answered by this loop: it is alive and not blocked
                    self.send(msg_id, "result", None)
                    continue
                if op == "cancel":
                    task = self.tasks.get(args[0])
                    if task is not None:
                        task.cancel()
                    continue
                self.tasks[msg_id] = loop.create_task(self.run(msg_id, op, args))


NICENESS = 10  # background work: on a busy machine the server's turns come first


def main() -> None:
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    out = os.fdopen(os.dup(1), "wb")  # frames only: everything else printed goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    asyncio.run(Child(out).serve(sys.stdin.buffer))


if __name__ == "__main__":
    main()
