"""A real, throwaway PostgreSQL server for tests and benchmarks (Debian's `postgresql` package).

`TempPostgres.start()` finds `initdb` (installing the package with apt-get when it is missing
and this process is root), initializes a cluster in a fresh temporary directory owned by an
unprivileged user (`nobody` when running as root: PostgreSQL refuses to run as root), starts it
on a free loopback port with trust authentication for that loopback only, and `stop()` removes
it all. `Unavailable` says why a server cannot be had here (callers skip with that reason).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROLE = "topicforest"


class Unavailable(Exception):
    """PostgreSQL cannot be installed or started on this machine."""


def find_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def install() -> Path:
    """The server binaries' directory, installing Debian's package if needed (root only)."""
    found = find_bin()
    if found is not None:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "postgresql"],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise Unavailable(f"apt-get could not install postgresql: {done.stderr.strip()[-300:]}")
    found = find_bin()
    if found is None:
        raise Unavailable("the postgresql package installed no initdb")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TempPostgres:
    def __init__(self) -> None:
        self.bin = install()
        self.dir = Path(tempfile.mkdtemp(prefix="topicforest-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self.dir.chmod(0o700)

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=self.dir
        )
        if done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise Unavailable(f"{args[0]} failed: {done.stderr.strip()[-800:]}\n{tail}")
        return done

    def start(self) -> TempPostgres:
        self._run("initdb", "-D", str(self.data), "-U", ROLE, "--auth=trust", "-E", "UTF8",
                  "--no-instructions")  # fmt: skip
        self.resume()
        return self

    def resume(self) -> None:
        """Start the server on its port (again, after `halt`)."""
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=on"
            " -c max_connections=100 -c shared_buffers=32MB"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"),
                  "-o", options, "-w", "-t", "60", "start")  # fmt: skip

    def halt(self, mode: str = "fast") -> None:
        """Stop the server (`immediate`: as a crash would, no shutdown checkpoint)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A fresh database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.halt("immediate")
        except (Unavailable, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_until_reachable(url: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
