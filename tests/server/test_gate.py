"""The machine-wide side of the send gate: another server's turn holds upkeep back, briefly."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topicforest.workspace.gate import MACHINE_GATE_SECONDS, MachineTurns, SendGate

pytestmark = pytest.mark.skipif(
    not hasattr(fcntl, "F_OFD_GETLK"), reason="open-file-description locks are Linux's"
)

# Each MachineTurns opens the file afresh: to the kernel, two of them are two servers.


def test_a_turn_sending_anywhere_on_the_machine_is_seen(tmp_path: Path) -> None:
    ours, theirs = MachineTurns(tmp_path / "sending.lock"), MachineTurns(tmp_path / "sending.lock")
    assert not ours.busy() and not theirs.busy()
    theirs.hold()
    theirs.hold()  # two turns of one process
    assert ours.busy() and theirs.busy()
    theirs.release()
    assert ours.busy()
    theirs.release()
    assert not ours.busy() and not theirs.busy()


def test_a_killed_servers_turn_no_longer_counts(tmp_path: Path) -> None:
    path = tmp_path / "sending.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        ours = MachineTurns(path)
        assert ours.busy()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=120)
        assert not ours.busy()
    finally:
        holder.kill()


HOLD = """
import sys, time
from pathlib import Path
from topicforest.workspace.gate import MachineTurns
turns = MachineTurns(Path(sys.argv[1]))
turns.hold()
print("holding", flush=True)
time.sleep(60)
"""


async def test_upkeep_waits_for_another_servers_turn_to_send(tmp_path: Path) -> None:
    ours = SendGate(MachineTurns(tmp_path / "sending.lock"))
    theirs = SendGate(MachineTurns(tmp_path / "sending.lock"))
    theirs.enter()
    assert ours.is_open and not ours.is_quiet  # our own turns: none; the machine's: one
    asyncio.get_running_loop().call_later(0.02, theirs.leave)
    started = time.monotonic()
    assert await ours.wait()
    assert ours.is_quiet and time.monotonic() - started >= 0.015  # theirs left, not the bound


async def test_a_turn_that_never_sends_holds_other_servers_briefly(tmp_path: Path) -> None:
    ours = SendGate(MachineTurns(tmp_path / "sending.lock"))
    theirs = SendGate(MachineTurns(tmp_path / "sending.lock"))
    theirs.enter()  # stuck before its first byte
    started = time.monotonic()
    assert await ours.wait()
    waited = time.monotonic() - started
    assert MACHINE_GATE_SECONDS <= waited < 120  # the bound ended it (theirs never left)
    assert not ours.is_quiet


async def test_our_own_turn_arriving_meanwhile_goes_first(tmp_path: Path) -> None:
    ours = SendGate(MachineTurns(tmp_path / "sending.lock"))
    theirs = SendGate(MachineTurns(tmp_path / "sending.lock"))
    theirs.enter()
    waiting = asyncio.create_task(ours.wait())
    await asyncio.sleep(0)  # it found theirs sending and polls
    ours.enter()  # then one of ours came in
    await asyncio.sleep(MACHINE_GATE_SECONDS + 0.1)  # past the bound on theirs
    assert not waiting.done()
    ours.leave()
    assert await asyncio.wait_for(waiting, timeout=120)
    theirs.leave()


def test_without_a_lock_file_of_our_own_nobody_is_seen_sending(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the directory should be: cannot be created
    planted = tmp_path / "planted"
    planted.symlink_to(tmp_path / "elsewhere")  # a link left in a shared directory
    for path in (blocked / "sending.lock", planted):
        turns = MachineTurns(path)
        turns.hold()
        assert not turns.busy()
        turns.release()
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
def test_a_lock_file_another_user_made_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "sending.lock"
    path.write_text("")
    os.chown(path, 65534, 65534)  # nobody's: they could hold it to slow our upkeep
    turns = MachineTurns(path)
    turns.hold()
    assert not turns.busy()
    turns.release()
