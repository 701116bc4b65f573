"""aider's real `ChatSummary` as a baseline: run `aider_driver.py` in aider's own venv.

`make eval` builds `.venv-aider` (aider-chat pinned in the Makefile), never the project's venv.
If that interpreter is missing or cannot import aider, `check_aider` says why and the evaluation
leaves the column out: the baseline is never imitated.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from topicforest.eval.dataset import Conversation
from topicforest.eval.systems import BaselineRun, Cost

REPO = Path(__file__).resolve().parents[3]
AIDER_VENV = REPO / ".venv-aider"
DRIVER = Path(__file__).with_name("aider_driver.py")
# The context window the adapter reports as the model's `max_input_tokens` (ChatSummary keeps at
# most this minus 512 tokens of a head it summarizes): a typical 128k model, so it never binds.
MAX_INPUT_TOKENS = 128_000


class AiderUnavailable(RuntimeError):
    """aider's venv cannot run the driver (the message says why)."""


@dataclass(frozen=True)
class AiderJob:
    conversation: Conversation
    model: str  # the stub's model name, without the litellm provider prefix
    budget: int


def aider_python() -> Path:
    """The aider venv's interpreter (`TOPICFOREST_AIDER_PYTHON` overrides)."""
    override = os.environ.get("TOPICFOREST_AIDER_PYTHON")
    return Path(override) if override else AIDER_VENV / "bin" / "python"


async def _run(args: Sequence[str], stdin: bytes | None) -> tuple[int, bytes, bytes]:
    python = aider_python()
    if not python.exists():
        raise AiderUnavailable(f"{python} not found (`make eval` builds {AIDER_VENV.name})")
    process = await asyncio.create_subprocess_exec(
        str(python),
        "-I",  # isolated: aider's venv only, never this package or PYTHONPATH
        str(DRIVER),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(stdin)
    return process.returncode or 0, out, err


async def check_aider() -> str:
    """aider-chat's version in its venv; raises AiderUnavailable with the reason."""
    code, out, err = await _run(["--check"], None)
    if code != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise AiderUnavailable(f"{aider_python()} cannot import aider.history: {last[0]}")
    return str(json.loads(out)["aider"])


async def run_aider(jobs: Sequence[AiderJob], base_url: str, api_key: str) -> list[BaselineRun]:
    """Replay each job through aider's ChatSummary against the stub at `base_url`, in one
    driver process (the stub must be serving on this event loop meanwhile)."""
    spec = {
        "base_url": base_url,
        "api_key": api_key,
        "max_input_tokens": MAX_INPUT_TOKENS,
        "jobs": [
            {
                "id": str(i),
                "model": job.model,
                "budget": job.budget,
                "messages": [
                    {"role": m.role, "content": m.content} for m in job.conversation.messages
                ],
            }
            for i, job in enumerate(jobs)
        ],
    }
    code, out, err = await _run([], json.dumps(spec).encode())
    if code != 0:
        tail = "\n".join(err.decode(errors="replace").strip().splitlines()[-5:])
        raise AiderUnavailable(f"the aider driver failed (exit {code}):\n{tail}")
    runs = []
    for result in json.loads(out)["results"]:
        cost = Cost(
            calls=int(result["calls"]),
            failed=int(result["failed"]),
            input_tokens=int(result["input_tokens"]),
            output_tokens=int(result["output_tokens"]),
        )
        context = "\n\n".join(str(m["content"]) for m in result["context"])
        runs.append(BaselineRun(context, cost))
    return runs
