"""Fixtures shared by every test: the reference service in-process and as a real process.

In-process: `httpx.WSGITransport` mounts the Flask app, base URL `http://testserver`.
Real process: `mkdocs-blogsvc server run` on a free loopback port, same database file, so a
test can change data with `server admin` (or the ORM) and the running server sees it.
"""

from __future__ import annotations

import compileall
import functools
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.server import create_app, ratelimit, security, tables
from mkdocs_blogsvc.server.database import Database

os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # Material 9.8's end-of-life banner

IN_PROCESS_URL = "http://testserver"

#: Fixtures shared by the plugin and end-to-end tests: a service in a thread with an owner,
#: real logins, and a clean MkDocs plugin cache for every test.
pytest_plugins = ["tests.e2e.sites", "tests.plugin.auth_helpers", "tests.postgres"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--update-golden`: tests/plugin/test_golden.py rewrites its golden files from what the
    renderer writes now, instead of failing on a difference (then review `git diff`)."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/plugin/golden/ from the renderer's output (review git diff after)",
    )


#: Run a command (`sys.executable` first) with SIGINT at its default, as a terminal gives its
#: foreground job. A suite started in the background (`pytest &`, some CI runners) has SIGINT
#: ignored, children inherit that, and Python then installs no KeyboardInterrupt handler: a test
#: that sends Ctrl-C's signal would wait for a process that never sees it.
DEFAULT_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


def with_default_sigint(command: list[str]) -> list[str]:
    """`command`, started with SIGINT at its default (see `DEFAULT_SIGINT_THEN_EXEC`)."""
    return [sys.executable, "-c", DEFAULT_SIGINT_THEN_EXEC, *command]


#: The checkout (the package is installed editable from it, as the README says).
ROOT = Path(__file__).resolve().parents[1]
#: Where the tests' temporary folders go when the machine has it: memory.
MEMORY = "/dev/shm"
#: The free space it must have: the folders of passed tests are removed as they pass, but a
#: module's shared folders stay until the end of the run (a few hundred MB).
MEMORY_NEEDED = 2 << 30


def pytest_configure(config: pytest.Config) -> None:
    """Temporary folders (`tmp_path`) in memory when the machine has a tmpfs at /dev/shm with
    2 GiB free, unless `--basetemp` or `PYTEST_DEBUG_TEMPROOT` names another place: the suite
    writes and fsyncs tens of thousands of small files, and on disk a run took 130 s of system
    CPU against 71 to 74 s in memory. No test depends on the disk: durability is tested with
    kill -9 (a crashed process, which memory reproduces exactly), never with a power cut.
    pyproject.toml keeps only the folders of failed tests."""
    chosen = config.option.basetemp is not None or "PYTEST_DEBUG_TEMPROOT" in os.environ
    if not chosen and os.path.ismount(MEMORY) and os.access(MEMORY, os.W_OK | os.X_OK):
        free = os.statvfs(MEMORY)
        if free.f_bavail * free.f_frsize >= MEMORY_NEEDED:  # not a container's 64 MB /dev/shm
            os.environ["PYTEST_DEBUG_TEMPROOT"] = MEMORY  # the xdist workers inherit it
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        # PYTHONDONTWRITEBYTECODE=1 (as on the project's machines): every process the suite
        # starts (servers, commands, builds) would compile each module of the package it
        # imports. Compiled once here, they read the bytecode instead.
        compileall.compile_dir(ROOT / "mkdocs_blogsvc", quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores. About a third of the suite's time is spent
    waiting (for processes to start and stop, for sockets, for a rebuild), which a third worker
    on two cores fills; more would only make the CPU-bound tests slower."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with a `slow` test run first. pytest-xdist's `loadscope` hands out whole modules
    in the order collected (`--no-loadscope-reorder`), so the long ones start while the other
    worker takes the many short ones, instead of one worker finishing the suite alone."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)


@pytest.fixture(autouse=True)
def not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs as on a person's machine unless it sets `CI` itself: the suite runs in CI
    with `CI=true`, and there the plugin stops a build that has no credentials (access.py).
    Subprocesses started with `os.environ` inherit this."""
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.from_path(tmp_path / "service.db")
    yield database
    database.dispose()


@pytest.fixture
def app(db: Database):
    return create_app(db, secret_key="test-secret", TESTING=True)


@pytest.fixture
def http(app) -> Iterator[httpx.Client]:
    """An httpx client talking to the in-process service, without following redirects."""
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as client:
        yield client


@dataclass
class Owner:
    """A user and one blog, inserted straight into the database (no OAuth involved)."""

    user_id: int
    username: str
    password: str
    blog_id: str
    blog_slug: str


@functools.cache
def password_hash(password: str) -> str:
    """`security.hash_password(password)`, once per process and password: scrypt is slow on
    purpose (about 60 ms of CPU) and 500 tests add an owner. Each test has a database of its
    own, so a salt shared between tests' databases is seen by none of them; signing in still
    runs the real check against a real scrypt hash."""
    return security.hash_password(password)


def add_owner(db: Database, username: str = "alice", blog_slug: str = "alice-blog") -> Owner:
    now = db.now()
    password = f"{username}-password"
    with db.session(write=True) as session:
        user = tables.User(username=username, password_hash=password_hash(password), created_at=now)
        session.add(user)
        session.flush()
        blog = tables.Blog(
            id=security.new_cuid(),
            owner_id=user.id,
            name=f"{username.title()}'s Blog",
            slug=blog_slug,
            description="Notes",
            language="en",
            created_at=now,
        )
        session.add(blog)
        session.flush()
        return Owner(user.id, username, password, blog.id, blog.slug)


def add_article(
    db: Database, blog_id: str, title: str, *, status: str = "published", minutes_ago: int = 0, **fields
) -> str:
    now = db.now()
    with db.session(write=True) as session:
        article = tables.Article(
            id=security.new_cuid(),
            blog_id=blog_id,
            slug=fields.pop("slug", title.lower().replace(" ", "-")),
            title=title,
            description=fields.pop("description", f"About {title}"),
            content=fields.pop("content", f"# {title}\n\nBody of {title}."),
            status=status,
            published_at=None if status == "draft" else now - timedelta(minutes=minutes_ago),
            updated_at=now,
            created_at=now,
            **fields,
        )
        session.add(article)
        return article.id


@pytest.fixture
def owner(db: Database) -> Owner:
    """A user with one blog, in the test's database."""
    return add_owner(db)


@pytest.fixture
def api(http: httpx.Client, db: Database, owner: Owner) -> httpx.Client:
    """The in-process client, carrying a token for `owner`'s blog."""
    http.headers["Authorization"] = f"Bearer {issue_access_token(db, owner)}"
    return http


def issue_access_token(
    db: Database,
    owner: Owner,
    scope: str = "articles:read blog:read",
    client_id: str = "test-client",
    lifetime: int = security.ACCESS_TOKEN_LIFETIME,
) -> str:
    """A valid access token for `owner`'s blog, minted directly (for data-endpoint tests), valid
    for `lifetime` seconds."""
    now = db.now()
    raw = security.new_token(security.ACCESS_TOKEN_PREFIX)
    with db.session(write=True) as session:
        grant = tables.Grant(
            client_id=client_id, user_id=owner.user_id, blog_id=owner.blog_id, scope=scope, connected_at=now
        )
        session.add(grant)
        session.flush()
        session.add(
            tables.Token(
                grant_id=grant.id,
                kind="access",
                token_hash=security.token_hash(raw),
                scope=scope,
                issued_at=now,
                expires_at=now + timedelta(seconds=lifetime),
            )
        )
    return raw


def start_of_window(db: Database, seconds: int) -> None:
    """Move the service's test clock past every rate-limit hit so far (a sliding window of
    `seconds` remembers a hit for up to 1.1 x `seconds`), to one second past a multiple of
    `seconds`: the limits' buckets start there, so a test's requests start in a fresh one."""
    past_every_hit = db.now().timestamp() + math.ceil(seconds * (1 + 1 / ratelimit.BUCKETS))
    db.advance_clock(past_every_hit - db.now().timestamp() + seconds - past_every_hit % seconds + 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    db_path: Path
    process: subprocess.Popen[bytes]
    #: The `--db` value when the database is a URL (PostgreSQL); else `db_path` is the SQLite file.
    database_url: str | None = None

    def admin(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `mkdocs-blogsvc server admin --db <db> ARGS...` as a user would."""
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "mkdocs_blogsvc",
                "server",
                "admin",
                "--db",
                self.database_url or str(self.db_path),
                *args,
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_live_server(
    db_path: Path, *args: str, env: dict[str, str] | None = None, database_url: str | None = None
) -> LiveServer:
    """`server run` on a free loopback port; `args` are more `server run` options. The database is
    `db_path` (SQLite), or `database_url` with the log next to `db_path`."""
    port = free_port()
    log_path = db_path.with_suffix(".log")
    with log_path.open("wb") as log:  # a file: a full pipe would block it; the child keeps its own handle
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mkdocs_blogsvc",
                "server",
                "run",
                "--db",
                database_url or str(db_path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=None if env is None else {**os.environ, **env},
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    # One client for every attempt: each new httpx client loads the CA bundle (34 ms of CPU),
    # and a server takes ten attempts or more to come up.
    with httpx.Client(timeout=1) as probe:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {log_path.read_text(errors='replace')}")
            try:
                probe.get(f"{url}/openapi.json")
                return LiveServer(url, db_path, process, database_url)
            except httpx.TransportError:
                time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not start within 30 s")


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[LiveServer]:
    """The reference service as a real process on a free loopback port (empty database)."""
    server = start_live_server(tmp_path / "live.db")
    yield server
    server.stop()
