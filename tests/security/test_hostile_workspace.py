"""A cloned repository may be hostile: opening it must never run its code. Its root may be the
current directory of whatever an editor starts there; a `litellm/` package planted at that root
must not be imported in place of ours by the server's litellm worker. (The VS Code client's own
start is checked in clients/vscode/test/unit/python.test.ts.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PLANT = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def hostile_repository(root: Path, *packages: str) -> Path:
    """A folder whose planted packages leave a marker file when imported."""
    marker = root / "pwned"
    for name in packages:
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(PLANT.format(marker=str(marker)))
    return marker


def test_the_litellm_worker_never_imports_from_the_servers_directory(tmp_path: Path) -> None:
    # the server runs in the repository (as any editor may start it); its worker imports litellm
    marker = hostile_repository(tmp_path, "litellm")
    script = textwrap.dedent(
        """
        import asyncio
        from topicforest.workspace.llm_worker import LLMWorker

        async def main() -> None:
            worker = LLMWorker()
            try:
                print(await worker.call("window", "gpt-4o-mini"))
            finally:
                await worker.close()

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the worker imported the repository's litellm"
    assert done.stdout.strip().isdigit()  # the real litellm's window for gpt-4o-mini
