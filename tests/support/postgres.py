"""A real Postgres server for the tests: Debian's `postgresql` package, a cluster of its own.

    with PostgresServer() as server:                      # initdb + pg_ctl start on a free port
        url = server.url                                  # postgresql://toolscout@127.0.0.1:PORT/toolscout
        other = server.database("t1")                     # a fresh database of its own
        server.restart()                                  # pg_ctl restart -m fast (same port, same data)

scripts/setup.sh installs the package (the test setup, not --runtime). The server binaries are
looked for in /usr/lib/postgresql/*/bin and on PATH; without them the tests that need one are
skipped, saying so. Postgres refuses to run as root, so as root the cluster belongs to the
`postgres` user the package creates (or `nobody`) and every command runs as that user; the cluster
lives in a temporary directory of its own (pytest's are private to root), removed at the end.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import pytest

__all__ = ["PostgresServer", "postgres_bin", "require_postgres"]

_MISSING = (
    "no Postgres server binaries (initdb, pg_ctl): install Debian's postgresql package "
    "(bash scripts/setup.sh does, or apt-get install -y postgresql)"
)


def postgres_bin() -> Path | None:
    """The directory holding initdb and pg_ctl, or None."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "initdb").exists() and Path(candidate, "pg_ctl").exists():
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb and shutil.which("pg_ctl") else None


def require_postgres() -> Path:
    found = postgres_bin()
    if found is None:
        pytest.skip(_MISSING)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    def __init__(self) -> None:
        self.bin = require_postgres()
        self.root = Path(tempfile.mkdtemp(prefix="toolscout-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://toolscout@127.0.0.1:{self.port}/toolscout"
        self._user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self._user = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue

    def _run(self, *command: str) -> None:
        argv = [str(self.bin / command[0]), *command[1:]]
        if self._user is not None:
            argv = ["setpriv", f"--reuid={self._user.pw_uid}", f"--regid={self._user.pw_gid}", "--clear-groups", *argv]
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')}")

    def start(self) -> None:
        if self._user is not None:
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "toolscout", "--auth=trust", "-E", "UTF8", "--no-sync")
        self._start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "toolscout", "toolscout")

    def _start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start")

    def database(self, name: str) -> str:
        """The URL of a new, empty database `name` on this server (dropped first if it exists): one
        per test, while the server is shared by a module."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name}")
            connection.execute(f"CREATE DATABASE {name}")
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def restart(self) -> None:
        """Stop (fast: every connection is cut) and start again on the same port and data."""
        self.stop()
        self._start()

    def start_again(self) -> None:
        """Start after `stop`, on the same port and data."""
        self._start()

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.stop()
        except RuntimeError:
            pass  # already stopped
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
