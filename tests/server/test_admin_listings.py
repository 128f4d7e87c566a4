"""`server admin list-*`, articles named by id or slug, and `--slug`: through the real CLI
(click's runner, in-process), checked against the database and the data API."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.server import content, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_owner, issue_access_token
from tests.server.conftest import db_argument

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


def admin(db: Database, *args: str) -> Result:
    return CliRunner().invoke(main, ["server", "admin", "--db", db_argument(db), *args])


def admin_json(db: Database, *args: str) -> Any:
    result = admin(db, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def refused(db: Database, *args: str) -> str:
    """The one-line error of a refused command (exit status 1, nothing on stdout)."""
    result = admin(db, *args)
    assert result.exit_code == 1, result.output
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    return result.stderr.removeprefix("Error: ").strip()


def add(db: Database, blog: str, title: str, *extra: str) -> dict[str, Any]:
    article: dict[str, Any] = admin_json(
        db, "add-article", "--blog", blog, "--title", title, "--content", f"About {title}.", *extra
    )
    return article


@pytest.fixture
def blog(db: Database, owner: Owner) -> dict[str, dict[str, Any]]:
    """Three articles of alice-blog: one published, one draft, one unpublished (changed in that order)."""
    articles = {
        "published": add(db, owner.blog_slug, "Shown"),
        "draft": add(db, owner.blog_slug, "Not yet", "--draft"),
        "unpublished": add(db, owner.blog_slug, "Gone"),
    }
    admin_json(db, "unpublish", articles["unpublished"]["id"])
    return articles


# --- list-articles --------------------------------------------------------------------------


def test_list_articles_shows_the_published_ones_as_a_table(db: Database, owner: Owner, blog: dict[str, Any]) -> None:
    result = admin(db, "list-articles", "--blog", owner.blog_slug)
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["id", "slug", "status", "title", "updatedAt"]
    assert len(rows) == 1
    shown = blog["published"]
    assert rows[0].split() == [shown["id"], "shown", "published", "Shown", shown["updatedAt"]]


def test_list_articles_all_as_json_newest_change_first(db: Database, owner: Owner, blog: dict[str, Any]) -> None:
    listed = admin_json(db, "list-articles", "--blog", owner.blog_slug, "--all", "--json")
    assert list(listed) == ["articles"]
    assert [(a["slug"], a["status"]) for a in listed["articles"]] == [
        ("gone", "unpublished"),
        ("not-yet", "draft"),
        ("shown", "published"),
    ]
    with db.session() as session:
        for row in listed["articles"]:
            article = session.get(tables.Article, row["id"])
            assert article is not None and article.title == row["title"]
    assert set(listed["articles"][0]) == {"id", "slug", "status", "title", "updatedAt"}


def test_list_articles_columns_line_up_and_titles_stay_on_one_line(db: Database, owner: Owner) -> None:
    add(db, owner.blog_slug, "A title\nwith a line break and an é")
    add(db, owner.blog_slug, "Short")
    lines = admin(db, "list-articles", "--blog", owner.blog_slug).stdout.splitlines()
    assert len(lines) == 3
    status_column = lines[0].index("status")
    assert all(line[status_column:].startswith(("status", "published")) for line in lines)
    assert "A title with a line break and an é" in lines[2]


def test_list_articles_of_an_empty_or_unknown_blog(db: Database, owner: Owner) -> None:
    assert admin(db, "list-articles", "--blog", owner.blog_slug).stdout == "no articles\n"
    assert admin_json(db, "list-articles", "--blog", owner.blog_slug, "--json") == {"articles": []}
    assert (
        refused(db, "list-articles", "--blog", "nope")
        == "unknown blog 'nope' (see them with `server admin list-blogs`)"
    )


# --- the other listings ---------------------------------------------------------------------


def test_every_kind_that_can_be_created_can_be_listed(db: Database, owner: Owner, blog: dict[str, Any]) -> None:
    client = admin_json(db, "create-client", "--name", "Site", "--redirect-uri", "http://127.0.0.1/cb", "--public")
    issue_access_token(db, owner, client_id=client["client_id"])

    users = admin_json(db, "list-users", "--json")["users"]
    assert [(u["id"], u["username"], u["blogs"]) for u in users] == [(owner.user_id, "alice", ["alice-blog"])]
    blogs = admin_json(db, "list-blogs", "--json")["blogs"]
    assert blogs == [
        {
            "id": owner.blog_id,
            "slug": "alice-blog",
            "name": "Alice's Blog",
            "language": "en",
            "owner": "alice",
            "published": 1,
            "articles": 3,
        }
    ]
    clients = admin_json(db, "list-clients", "--json")["clients"]
    assert [(c["client_id"], c["name"], c["public"], c["redirect_uris"]) for c in clients] == [
        (client["client_id"], "Site", True, ["http://127.0.0.1/cb"]),
    ]
    assert "secret" not in json.dumps(clients)
    connections = admin_json(db, "list-connections", "--json")["connections"]
    assert [(c["client_id"], c["user"], c["blog"], c["lastSyncAt"], c["revoked"]) for c in connections] == [
        (client["client_id"], "alice", "alice-blog", None, False),
    ]

    for command, header in [
        ("list-users", "id username blogs createdAt"),
        ("list-blogs", "id slug name language owner published articles"),
        ("list-clients", "client_id name public redirect_uris createdAt"),
        ("list-connections", "id client_id user blog scope connectedAt lastSyncAt revoked"),
    ]:
        lines = admin(db, command).stdout.splitlines()
        assert lines[0].split() == header.split() and len(lines) == 2, command
    assert admin(db, "list-clients").stdout.splitlines()[1].split()[:4] == [
        client["client_id"],
        "Site",
        "yes",
        "http://127.0.0.1/cb",
    ]


def test_empty_listings_say_so(db: Database) -> None:
    for kind in ("users", "blogs", "clients", "connections"):
        assert admin(db, f"list-{kind}").stdout == f"no {kind}\n"
        assert admin_json(db, f"list-{kind}", "--json") == {kind: []}


# --- an article named by its id or its slug ---------------------------------------------------


def test_every_article_command_takes_the_slug(db: Database, owner: Owner, api: httpx.Client) -> None:
    article = add(db, owner.blog_slug, "By slug", "--draft")
    assert admin_json(db, "publish", "by-slug")["status"] == "published"
    assert api.get("/api/v1/articles/by-slug").status_code == 200
    assert admin_json(db, "update-article", "by-slug", "--title", "Renamed")["title"] == "Renamed"
    assert admin_json(db, "unpublish", "by-slug")["status"] == "unpublished"
    assert api.get(f"/api/v1/articles/{article['id']}").status_code == 404
    assert admin_json(db, "delete-article", "by-slug") == {"id": article["id"], "slug": "by-slug", "deleted": True}
    with db.session() as session:
        assert session.get(tables.Article, article["id"]) is None


def test_a_slug_used_in_two_blogs_needs_the_blog(db: Database, owner: Owner) -> None:
    add_owner(db, "bob", "bob-blog")
    mine, theirs = add(db, owner.blog_slug, "Same title"), add(db, "bob-blog", "Same title")
    assert mine["slug"] == theirs["slug"] == "same-title"
    assert refused(db, "unpublish", "same-title") == (
        "the slug 'same-title' is used in several blogs ('alice-blog', 'bob-blog'): add --blog SLUG, or give the article id"
    )
    assert admin_json(db, "unpublish", "same-title", "--blog", "bob-blog")["id"] == theirs["id"]
    assert admin_json(db, "list-articles", "--blog", owner.blog_slug, "--json")["articles"][0]["id"] == mine["id"]
    # An id is unique on the service; with --blog it must be in that blog.
    assert admin_json(db, "publish", theirs["id"])["status"] == "published"
    assert refused(db, "publish", theirs["id"], "--blog", owner.blog_slug).startswith(
        f"unknown article {theirs['id']!r}: no article in blog 'alice-blog' has this id or slug"
    )


def test_an_unknown_article_names_the_value_and_how_to_list(db: Database, owner: Owner) -> None:
    for command in ("update-article", "publish", "unpublish", "delete-article"):
        message = refused(db, command, "no-such-thing")
        assert message == (
            "unknown article 'no-such-thing': no article has this id or slug "
            "(see them with `server admin list-articles --blog SLUG --all`)"
        ), command


# --- --slug ---------------------------------------------------------------------------------


def test_update_article_slug_moves_the_article_on_the_api(db: Database, owner: Owner, api: httpx.Client) -> None:
    article = add(db, owner.blog_slug, "Old name")
    moved = admin_json(db, "update-article", "old-name", "--slug", "new-name")
    assert (moved["id"], moved["slug"], moved["title"]) == (article["id"], "new-name", "Old name")
    assert moved["contentHash"] == article["contentHash"]  # the spec's hash covers title, description, content, tags
    assert moved["updatedAt"] >= article["updatedAt"]
    assert api.get("/api/v1/articles/new-name").json()["article"]["id"] == article["id"]
    assert api.get("/api/v1/articles/old-name").status_code == 404
    # The freed slug can be taken again, and giving an article its own slug changes nothing.
    assert add(db, owner.blog_slug, "Another", "--slug", "old-name")["slug"] == "old-name"
    assert admin_json(db, "update-article", article["id"], "--slug", "new-name")["slug"] == "new-name"


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        (
            "Bad_Slug",
            "invalid article slug 'Bad_Slug': use lowercase letters, digits and single hyphens, at most 100 characters",
        ),
        ("two--hyphens", "invalid article slug 'two--hyphens'"),
        ("-leading", "invalid article slug '-leading'"),
        ("", "invalid article slug ''"),
        ("x" * 101, f"invalid article slug '{'x' * 101}'"),
        ("olá", "invalid article slug 'olá'"),
    ],
)
def test_invalid_slugs_are_refused_in_one_line(db: Database, owner: Owner, slug: str, message: str) -> None:
    article = add(db, owner.blog_slug, "Keep me")
    assert refused(db, "update-article", article["id"], "--slug", slug).startswith(message)
    assert refused(
        db, "add-article", "--blog", owner.blog_slug, "--title", "T", "--content", "C", "--slug", slug
    ).startswith(message)
    with db.session() as session:
        assert [a.slug for a in session.query(tables.Article)] == ["keep-me"]


def test_a_taken_slug_is_refused_in_any_status(db: Database, owner: Owner, blog: dict[str, Any]) -> None:
    shown = blog["published"]
    message = refused(db, "update-article", shown["id"], "--slug", "not-yet")
    assert (
        message == f"the slug 'not-yet' is taken in blog 'alice-blog' by article {blog['draft']['id']}: choose another"
    )
    assert refused(
        db, "add-article", "--blog", owner.blog_slug, "--title", "T", "--content", "C", "--slug", "gone"
    ).startswith("the slug 'gone' is taken in blog 'alice-blog'")
    add_owner(db, "bob", "bob-blog")
    assert add(db, "bob-blog", "Elsewhere", "--slug", "not-yet")["slug"] == "not-yet"  # slugs are per blog
    assert admin_json(db, "list-articles", "--blog", owner.blog_slug, "--json")["articles"][0]["slug"] == "shown"


def test_find_article_in_process(db: Database, owner: Owner) -> None:
    article = add(db, owner.blog_slug, "Found")
    with db.session() as session:
        assert content.find_article(session, "found").id == article["id"]
        assert content.find_article(session, article["id"], owner.blog_slug).slug == "found"
