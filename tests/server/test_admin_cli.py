"""`mkdocs-blogsvc server admin ...`: one JSON object on stdout, or one line on stderr and exit 1.

The error matrix runs through click's runner (the same code, in-process, fast); the commands a
user scripts run as real subprocesses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database

SAMPLES = resources.files("mkdocs_blogsvc.server").joinpath("sample_media")


def run_admin(db_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs_blogsvc", "server", "admin", "--db", str(db_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def admin_json(db_path: Path, *args: str) -> dict[str, Any]:
    result = run_admin(db_path, *args)
    assert result.returncode == 0, result.stderr
    value = json.loads(result.stdout)
    assert isinstance(value, dict)
    return value


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "cover": tmp_path / "cover.png",
        "inline": tmp_path / "chart.png",
        "text": tmp_path / "notes.txt",
        "svg": tmp_path / "logo.svg",
        "schema": tmp_path / "schema.json",
        "bad_json": tmp_path / "bad.json",
        "list_json": tmp_path / "list.json",
        "body": tmp_path / "body.md",
        "latin1": tmp_path / "latin1.md",
    }
    paths["cover"].write_bytes(SAMPLES.joinpath("cover-03.png").read_bytes())
    paths["inline"].write_bytes(SAMPLES.joinpath("inline-build-times.png").read_bytes())
    paths["text"].write_text("not an image")
    paths["svg"].write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    paths["schema"].write_text(json.dumps({"@context": "https://schema.org", "@type": "BlogPosting", "headline": "T"}))
    paths["bad_json"].write_text("{nope")
    paths["list_json"].write_text("[1, 2]")
    paths["body"].write_text("## From a file\n\nChart: ![chart](inline:1)\n", encoding="utf-8")
    paths["latin1"].write_bytes("caf\xe9".encode("latin-1"))
    return paths


@pytest.fixture(scope="module")
def blog_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with user alice and blog `notes`, made once through the CLI runner."""
    path = tmp_path_factory.mktemp("template") / "cli.db"
    for args in (
        ["create-user", "--username", "alice", "--password", "pw"],
        ["create-blog", "--owner", "alice", "--name", "Notes", "--slug", "notes", "--language", "en"],
    ):
        result = CliRunner().invoke(main, ["server", "admin", "--db", str(path), *args])
        assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def blog_db(blog_db_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the template database for one test."""
    path = tmp_path / "cli.db"
    shutil.copyfile(blog_db_template, path)
    return path


def invoke(db_path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["server", "admin", "--db", str(db_path), *args])


@pytest.mark.slow
def test_a_blog_scripted_end_to_end_as_subprocesses(tmp_path: Path, files: dict[str, Path]) -> None:
    db_path = tmp_path / "blog.db"
    assert admin_json(db_path, "create-user", "--username", "bob", "--password", "pw")["username"] == "bob"
    blog = admin_json(
        db_path,
        "create-blog",
        "--owner",
        "bob",
        "--name",
        "Bob's",
        "--slug",
        "bob",
        "--language",
        "fr",
        "--description",
        "Carnet",
    )
    assert (blog["slug"], blog["language"], blog["description"]) == ("bob", "fr", "Carnet")
    client = admin_json(
        db_path,
        "create-client",
        "--name",
        "Site",
        "--redirect-uri",
        "https://site.example/cb",
        "--redirect-uri",
        "http://127.0.0.1/cb",
    )
    assert client["client_secret"] and client["redirect_uris"] == ["https://site.example/cb", "http://127.0.0.1/cb"]
    public = admin_json(
        db_path, "create-client", "--name", "CLI", "--redirect-uri", "http://127.0.0.1/callback", "--public"
    )
    assert public["client_secret"] is None

    added = admin_json(
        db_path,
        "add-article",
        "--blog",
        "bob",
        "--title",
        "Première note",
        "--content-file",
        str(files["body"]),
        "--description",
        "D",
        "--tag",
        "a",
        "--tag",
        "b",
        "--seo-keyword",
        "k",
        "--seo-score",
        "8.5",
        "--cover-image",
        str(files["cover"]),
        "--inline-image",
        str(files["inline"]),
        "--schema-org-json",
        str(files["schema"]),
        "--base-url",
        "http://127.0.0.1:9999",
    )
    assert added["status"] == "published" and added["slug"] == "premiere-note"
    assert added["coverImageUrl"].startswith("http://127.0.0.1:9999/media/") and added["coverImageUrl"].endswith(".png")
    assert added["content"] == f"## From a file\n\nChart: ![chart]({added['inlineImageUrls'][0]})\n"
    assert added["schemaOrgJson"]["headline"] == "T" and added["seoScore"] == 8.5 and added["tags"] == ["a", "b"]

    updated = admin_json(db_path, "update-article", added["id"], "--title", "Renamed", "--seo-score", "", "--tag", "")
    assert (updated["title"], updated["slug"], updated["seoScore"], updated["tags"]) == (
        "Renamed",
        "premiere-note",
        None,
        [],
    )
    assert admin_json(db_path, "unpublish", added["id"])["status"] == "unpublished"
    assert admin_json(db_path, "publish", added["id"])["status"] == "published"
    assert admin_json(db_path, "delete-article", added["id"]) == {
        "id": added["id"],
        "slug": "premiere-note",
        "deleted": True,
    }
    assert admin_json(db_path, "advance-clock", "90")["offset_seconds"] == 90

    failed = run_admin(db_path, "publish", added["id"])
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.startswith(f"Error: unknown article '{added['id']}': no article has this id or slug")


@pytest.mark.slow
def test_seed_prints_the_sample_credentials(tmp_path: Path) -> None:
    seeded = admin_json(tmp_path / "seed.db", "seed")
    assert seeded["user"] == "demo" and seeded["password"] == "demo-password"
    assert set(seeded) == {"user", "password", "blog", "client_id", "articles"}
    assert set(seeded["blog"]) == {"id", "slug", "name"} and seeded["articles"] >= 12
    again = run_admin(tmp_path / "seed.db", "seed")
    assert again.returncode == 1 and "already holds the sample blog" in again.stderr
    assert "Traceback" not in again.stderr and len(again.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create-user", "--username", "alice", "--password", "x"], "user 'alice' already exists"),
        (["create-blog", "--owner", "zed", "--name", "N", "--slug", "s", "--language", "en"], "unknown user 'zed'"),
        (
            ["create-blog", "--owner", "alice", "--name", "N", "--slug", "notes", "--language", "en"],
            "slug 'notes' already exists",
        ),
        (["create-blog", "--owner", "alice", "--name", "N", "--slug", "s", "--language", "english"], "ISO 639-1"),
        (["create-client", "--name", "N", "--redirect-uri", "http://evil.example/cb"], "plain http"),
        (["add-article", "--blog", "nope", "--title", "T", "--content", "C"], "unknown blog 'nope'"),
        (["add-article", "--blog", "notes", "--content", "C"], "give --title"),
        (["add-article", "--blog", "notes", "--title", "T"], "give --content or --content-file"),
        (["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--content-file", "{body}"], "not both"),
        (["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--seo-score", "11"], "outside 0..10"),
        (
            ["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--seo-score", "high"],
            "must be a number",
        ),
        (["add-article", "--blog", "notes", "--title", "T", "--content-file", "{missing}"], "cannot read content file"),
        (["add-article", "--blog", "notes", "--title", "T", "--content-file", "{latin1}"], "not UTF-8"),
        (
            ["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--cover-image", "{missing}"],
            "cannot read cover image",
        ),
        (
            ["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--cover-image", "{text}"],
            "cover image: not an image",
        ),
        (
            ["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--inline-image", "{svg}"],
            "SVG images are refused",
        ),
        (
            [
                "add-article",
                "--blog",
                "notes",
                "--title",
                "T",
                "--content",
                "![x](inline:3)",
                "--inline-image",
                "{inline}",
            ],
            "inline:3",
        ),
        (
            ["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--schema-org-json", "{bad_json}"],
            "not valid JSON",
        ),
        (
            ["add-article", "--blog", "notes", "--title", "T", "--content", "C", "--schema-org-json", "{list_json}"],
            "list.json' must hold a JSON object",
        ),
        (["update-article", "nope", "--title", "T"], "unknown article 'nope'"),
        (["publish", "nope"], "unknown article 'nope'"),
        (["unpublish", "nope"], "unknown article 'nope'"),
        (["delete-article", "nope"], "unknown article 'nope'"),
        (["advance-clock", "--", "-5"], "only moves forward"),
        # found by review: each of these was a traceback, or was stored
        (["advance-clock", "1e300"], "the test clock may run at most 100 years"),
        (["advance-clock", "3e11"], "the test clock may run at most 100 years"),
        (["create-client", "--name", "N", "--redirect-uri", "http://[::1/cb"], "must be an absolute URI"),
        (["create-client", "--name", "N", "--redirect-uri", "http://127.0.0.1:99999/cb"], "must be an absolute URI"),
        (["create-client", "--name", "N", "--redirect-uri", "https://exa mple.com/cb"], "must be an absolute URI"),
        (["revoke-connection", "99999999999999999999"], "no connection 99999999999999999999"),
        (
            ["add-article", "--blog", "notes", "--title", "bad\udcff", "--content", "C"],
            "--title 'bad\\udcff' is not UTF-8",
        ),
    ],
)
def test_refusals_are_one_line_with_exit_status_1(
    blog_db: Path, files: dict[str, Path], args: list[str], message: str
) -> None:
    paths = {name: str(path) for name, path in files.items()} | {"missing": str(blog_db.parent / "missing.png")}
    result = invoke(blog_db, *(arg.format(**paths) for arg in args))
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: ")
    assert message in result.stderr
    with Database.from_path(blog_db).session() as session:
        assert session.query(tables.Article).count() == 0


def test_a_refused_clock_step_leaves_the_clock_as_it_was(blog_db: Path) -> None:
    """Found by review: `advance-clock 1e300` saved its offset, then every command and request
    failed on dates out of range, and the clock cannot be moved back."""
    assert invoke(blog_db, "advance-clock", "1e300").exit_code == 1
    result = invoke(blog_db, "advance-clock", "60")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["offset_seconds"] == 60


@pytest.mark.parametrize("what", ["content", "password"])
def test_standard_input_that_is_not_utf8_is_one_line(blog_db: Path, what: str) -> None:
    """Found by review: `--content-file -` (and a piped password) with bytes that are not UTF-8
    was a traceback (lone surrogates reached the database)."""
    args = (
        ["add-article", "--blog", "notes", "--title", "T", "--content-file", "-"]
        if what == "content"
        else ["create-user", "--username", "zed"]
    )
    result = CliRunner().invoke(main, ["server", "admin", "--db", str(blog_db), *args], input=b"\xff\xfe\n")
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: the {what} on standard input is not UTF-8 text: save it as UTF-8\n"


def test_a_database_in_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = invoke(tmp_path / "no" / "such" / "x.db", "create-user", "--username", "a", "--password", "b")
    assert result.exit_code == 1
    assert (
        result.stderr.strip()
        == f"Error: cannot open database {tmp_path / 'no' / 'such' / 'x.db'}: folder {tmp_path / 'no' / 'such'} does not exist"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["add-article", "--blog", "ana", "--title", "T", "--content", "C"],
        ["list-blogs"],
        ["migrate"],
        ["advance-clock", "1"],
    ],
)
def test_a_missing_database_file_is_created_only_by_the_first_steps(tmp_path: Path, args: list[str]) -> None:
    """A path relative to the wrong folder must not quietly start an empty database."""
    missing = tmp_path / "blog.db"
    result = invoke(missing, *args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip() == (
        f"Error: no database at {missing}: check --db (a relative path starts from the "
        "current folder); `server admin --db PATH create-user` or `seed` starts a new one"
    )
    assert not missing.exists()
    created = invoke(missing, "create-user", "--username", "ana", "--password", "correct horse")
    assert created.exit_code == 0, created.output
    assert missing.is_file()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "",
            "Error: --db is empty: give a SQLite file path or a URL such as postgresql+psycopg://USER:PASSWORD@HOST/NAME",
        ),
        # the password is never shown, not even in a URL that cannot be parsed
        ("postgresql+psycopg://u:pw@h:abc/x", "Error: invalid database URL 'postgresql+psycopg://u:***@h:abc/x': use "),
        (
            "mysql://u:pw@h/x",
            "Error: unsupported database mysql://u:***@h/x: use postgresql+psycopg://USER:PASSWORD@HOST/NAME or ",
        ),
        ("postgresql+psycopg2://u:pw@h/x", "Error: unsupported database postgresql+psycopg2://u:***@h/x: use "),
    ],
)
@pytest.mark.parametrize(
    "command", [["server", "admin", "--db", "{target}", "seed"], ["server", "run", "--port", "0", "--db", "{target}"]]
)
def test_an_empty_or_malformed_db_option_is_one_line(target: str, message: str, command: list[str]) -> None:
    result = CliRunner().invoke(main, [arg.format(target=target) for arg in command])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    not_db = tmp_path / "notes.txt"
    not_db.write_text("plain text, certainly not SQLite " * 100)
    result = invoke(not_db, "advance-clock", "1")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(f"Error: cannot open database {not_db}: ") and len(result.stderr.splitlines()) == 1


def test_a_database_another_process_keeps_locked_is_a_clear_error(
    blog_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite waits its busy timeout (30 s; shortened here), then one line says what holds it."""
    import sqlite3

    from mkdocs_blogsvc.server import database

    monkeypatch.setattr(database, "DEFAULT_LOCK_TIMEOUT", 0.2)
    holder = sqlite3.connect(blog_db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        result = invoke(blog_db, "advance-clock", "1")
    finally:
        holder.close()
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.stderr.strip() == (
        f"Error: cannot open database {blog_db}: database is locked (another process held a write lock "
        "for 0.2 s: a sqlite3 shell or an admin command in a transaction; end it and try again)"
    )


def test_content_from_standard_input(blog_db: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "server",
            "admin",
            "--db",
            str(blog_db),
            "add-article",
            "--blog",
            "notes",
            "--title",
            "Piped",
            "--content-file",
            "-",
        ],
        input="Body from a pipe.\n",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["content"] == "Body from a pipe.\n"


def test_empty_values_clear_the_cover_and_the_nullable_fields(blog_db: Path, files: dict[str, Path]) -> None:
    """The options' help: '' removes the cover, and makes description, seo score and schema.org JSON null."""
    added = json.loads(
        invoke(
            blog_db,
            "add-article",
            "--blog",
            "notes",
            "--title",
            "Covered",
            "--content",
            "Body.",
            "--description",
            "D",
            "--cover-image",
            str(files["cover"]),
            "--seo-score",
            "5",
            "--schema-org-json",
            str(files["schema"]),
        ).stdout
    )
    assert added["coverImageUrl"] and added["description"] == "D"
    result = invoke(
        blog_db,
        "update-article",
        added["id"],
        "--cover-image",
        "",
        "--description",
        "",
        "--seo-score",
        "",
        "--schema-org-json",
        "",
    )
    assert result.exit_code == 0, result.output
    cleared = json.loads(result.stdout)
    assert [cleared[key] for key in ("coverImageUrl", "description", "seoScore", "schemaOrgJson")] == [None] * 4


def test_a_draft_is_printed_with_its_status(blog_db: Path) -> None:
    result = invoke(blog_db, "add-article", "--blog", "notes", "--title", "Later", "--content", "Soon.", "--draft")
    shown = json.loads(result.stdout)
    assert shown["status"] == "draft" and shown["publishedAt"] is None
    published = json.loads(invoke(blog_db, "publish", shown["id"]).stdout)
    assert published["status"] == "published" and published["publishedAt"]


def test_help_of_an_admin_command_needs_no_database_and_running_one_without_db_is_a_usage_error(tmp_path: Path) -> None:
    """Found by review: `server admin create-user --help` printed "Missing option '--db'"."""
    runner = CliRunner()
    shown = runner.invoke(main, ["server", "admin", "create-user", "--help"])
    assert shown.exit_code == 0 and "Create a user who can sign in" in shown.output
    missing = runner.invoke(main, ["server", "admin", "create-user", "--username", "a", "--password", "b"])
    assert missing.exit_code == 2
    assert missing.output.splitlines()[-1] == (
        "Error: Missing option '--db': name the database, such as server admin --db blogs.db COMMAND"
    )


def test_a_bad_rate_limits_variable_is_named_as_the_culprit(tmp_path: Path) -> None:
    """A bad `BLOGSVC_RATE_LIMITS` must not be blamed on a `--rate-limit` nobody typed."""
    result = CliRunner(env={"BLOGSVC_RATE_LIMITS": "token=x"}).invoke(
        main, ["server", "run", "--port", "0", "--db", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "Error: Invalid value for BLOGSVC_RATE_LIMITS: invalid rate limit 'token=x'" in result.stderr
    assert "'--rate-limit'" not in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_revoke_connection_prints_the_connection_or_names_an_unknown_id(blog_db: Path) -> None:
    from tests.conftest import Owner, issue_access_token

    database = Database.from_path(blog_db)
    with database.session() as session:
        user = session.query(tables.User).one()
        blog = session.query(tables.Blog).one()
    issue_access_token(database, Owner(user.id, "alice", "pw", blog.id, blog.slug))
    (connection,) = [
        row["id"] for row in json.loads(invoke(blog_db, "list-connections", "--json").output)["connections"]
    ]
    revoked = invoke(blog_db, "revoke-connection", str(connection))
    assert revoked.exit_code == 0, revoked.output
    assert json.loads(revoked.output)["revoked"] is True
    unknown = invoke(blog_db, "revoke-connection", "42")
    assert (
        unknown.exit_code == 1 and unknown.stderr.strip() == "Error: no connection 42: list them with list-connections"
    )


def test_create_user_asks_for_the_password_when_it_is_left_out(tmp_path: Path) -> None:
    """Found by an operator's review: `--password` on the command line shows in ps and history."""
    from mkdocs_blogsvc.server import security

    db_path = tmp_path / "x.db"
    result = CliRunner().invoke(
        main,
        ["server", "admin", "--db", str(db_path), "create-user", "--username", "zed"],
        input="correct horse\ncorrect horse\n",
    )
    assert result.exit_code == 0, result.output
    assert "correct horse" not in result.output
    with Database.from_path(db_path).session() as session:
        user = session.query(tables.User).one()
        assert security.verify_password("correct horse", user.password_hash)


def test_create_user_without_db_says_so_before_asking_for_a_password() -> None:
    """Found by review: the password was asked for twice, then the command said --db was missing."""
    result = CliRunner().invoke(main, ["server", "admin", "create-user", "--username", "zed"], input="pw\npw\n")
    assert result.exit_code == 2 and "Password" not in result.output
    assert result.output.splitlines()[-1].startswith("Error: Missing option '--db'")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a controlling terminal made with TIOCSCTTY")
def test_create_user_reads_a_piped_password_even_from_a_terminal_session(tmp_path: Path) -> None:
    """Found by review: `echo PW | ... create-user` from a shell waited for the password on the
    terminal (getpass reads /dev/tty, not the pipe), contrary to the docs."""
    import fcntl
    import os
    import termios

    main_fd, terminal_fd = os.openpty()

    def with_a_controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(terminal_fd, termios.TIOCSCTTY, 0)

    db_path = tmp_path / "x.db"
    try:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mkdocs_blogsvc",
                "server",
                "admin",
                "--db",
                str(db_path),
                "create-user",
                "--username",
                "zed",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=terminal_fd,
            preexec_fn=with_a_controlling_terminal,
        )
        try:
            out, _ = child.communicate(b"correct horse\n", timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail("create-user waited for the password on the terminal, not on its standard input")
    finally:
        os.close(main_fd)
        os.close(terminal_fd)
    assert child.returncode == 0 and json.loads(out)["username"] == "zed"
    from mkdocs_blogsvc.server import security

    with Database.from_path(db_path).session() as session:
        assert security.verify_password("correct horse", session.query(tables.User).one().password_hash)


def test_generate_articles_fills_a_blog_and_refuses_in_one_line(blog_db: Path) -> None:
    result = invoke(blog_db, "generate-articles", "--blog", "notes", "--count", "120", "--words", "30", "--covers")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["blog"], report["generated"], report["published"], report["words"], report["covers"]) == (
        "notes",
        120,
        120,
        30,
        True,
    )
    listed = json.loads(invoke(blog_db, "list-articles", "--blog", "notes", "--json").output)["articles"]
    assert len(listed) == 120 and {row["status"] for row in listed} == {"published"}
    for args, message in (
        (["--blog", "nope", "--count", "5"], "Error: unknown blog 'nope' (see them with `server admin list-blogs`)\n"),
        (["--blog", "notes", "--count", "0"], "Error: count must be from 1 to 1,000,000, not 0\n"),
        (["--blog", "notes", "--count", "5", "--words", "-3"], "Error: words must be from 1 to 100,000, not -3\n"),
    ):
        refused = invoke(blog_db, "generate-articles", *args)
        assert refused.exit_code == 1 and refused.output == message
