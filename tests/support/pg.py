"""A throwaway PostgreSQL server for the tests (``fairmt sweep --storage postgresql://…``).

:func:`postgresql` is a session-scoped fixture: a cluster made with ``initdb`` in a temporary folder, started with
``pg_ctl`` on a free port of 127.0.0.1 only (and a Unix socket in that folder), a password-protected superuser
(SCRAM), and the URL ``postgresql://fairmt:PASSWORD@127.0.0.1:PORT/postgres`` yielded; the server is stopped and the
folder removed at the end of the session. A test skips, saying why, where the server's programs (``initdb``,
``pg_ctl``, ``postgres``: Debian's ``postgresql-15``, on the PATH or in ``pg_config --bindir``) or the driver
(``psycopg``, in the ``sweep`` extra) are missing.

``initdb`` refuses to run as root: under root (CI) the cluster belongs to ``nobody`` (the folder is handed to that
user, and the server's programs run as it); otherwise to the current user.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import needs

UNPRIVILEGED = "nobody"
USER = "fairmt"


@dataclass
class Server:
    url: str = field(repr=False)  # postgresql://fairmt:PASSWORD@127.0.0.1:PORT/postgres
    password: str = field(repr=False)
    port: int
    folder: Path

    def url_for(self, database: str = "postgres", password: str | None = None) -> str:
        return f"postgresql://{USER}:{password or self.password}@127.0.0.1:{self.port}/{database}"


def bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    found = [shutil.which(p) for p in ("initdb", "pg_ctl", "postgres")]
    if all(found):
        return Path(found[1]).parent
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            folder = Path(
                subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
            )
        except (OSError, subprocess.CalledProcessError):
            return None
        if all((folder / p).is_file() for p in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_owner(cmd: list[str], folder: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    kw = {}
    if os.geteuid() == 0:
        kw = {"user": UNPRIVILEGED, "group": _group_of(UNPRIVILEGED), "extra_groups": []}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(folder)}
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def _group_of(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_gid


def start(bin_folder: Path) -> Server:
    """initdb + pg_ctl start; raises RuntimeError with the server's output when either fails."""
    folder = Path(tempfile.mkdtemp(prefix="fairmt-pg-"))
    password = secrets.token_urlsafe(16)
    (folder / "pw").write_text(password + "\n")
    if os.geteuid() == 0:
        import pwd

        entry = pwd.getpwnam(UNPRIVILEGED)
        for p in (folder, folder / "pw"):
            os.chown(p, entry.pw_uid, entry.pw_gid)
    os.chmod(folder, 0o700)
    data = folder / "data"
    init = _as_owner(
        [
            str(bin_folder / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--pwfile",
            str(folder / "pw"),
            "--auth",
            "scram-sha-256",
            "--encoding",
            "UTF8",
            "--locale",
            "C",
            "--no-sync",
        ],
        folder,
    )
    if init.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr[-2000:]}")
    (folder / "pw").unlink()
    for _ in range(3):  # a port taken between choosing it and the server binding it: another one
        port = _free_port()
        opts = f"-c listen_addresses=127.0.0.1 -c port={port} -k {folder} -c fsync=off -c max_connections=100"
        run = _as_owner(
            [
                str(bin_folder / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(folder / "server.log"),
                "-o",
                opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
            folder,
        )
        if run.returncode == 0:
            return Server(f"postgresql://{USER}:{password}@127.0.0.1:{port}/postgres", password, port, folder)
    log = (folder / "server.log").read_text(errors="replace")[-2000:] if (folder / "server.log").exists() else ""
    shutil.rmtree(folder, ignore_errors=True)
    raise RuntimeError(f"pg_ctl start failed ({run.returncode}): {run.stderr[-1000:]}\n{log}")


def stop(server: Server, bin_folder: Path) -> None:
    _as_owner(
        [str(bin_folder / "pg_ctl"), "-D", str(server.folder / "data"), "-m", "immediate", "-w", "stop"],
        server.folder,
        timeout=60,
    )
    shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgresql():
    """A running throwaway PostgreSQL server (:class:`Server`); skips where none can be made here."""
    needs.require("postgresql")  # tests/support/needs.py: the server programs (initdb, pg_ctl, postgres)
    bin_folder = bindir()
    assert bin_folder is not None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip('no PostgreSQL driver: pip install "fairmt[sweep]" (psycopg 3)')
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam(UNPRIVILEGED)
        except KeyError:
            pytest.skip(f"running as root and no {UNPRIVILEGED!r} user to run initdb as (it refuses root)")
    server = start(bin_folder)
    try:
        yield server
    finally:
        stop(server, bin_folder)
