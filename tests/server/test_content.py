"""The admin functions, in-process, checked through the database and the real data API."""

from __future__ import annotations

import re
from datetime import timedelta
from importlib import resources

import httpx
import pytest

from mkdocs_blogsvc.server import content, security, tables
from mkdocs_blogsvc.server.clients import is_loopback_host
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ContentError
from tests.conftest import Owner

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres

SAMPLES = resources.files("mkdocs_blogsvc.server").joinpath("sample_media")
IMAGE_A = SAMPLES.joinpath("inline-sync-diff.png").read_bytes()
IMAGE_B = SAMPLES.joinpath("inline-wal-readers.png").read_bytes()
COVER = SAMPLES.joinpath("cover-02.png").read_bytes()
BASE = "http://testserver"


def article(**fields: object) -> content.ArticleInput:
    fields.setdefault("title", "Hello World")
    fields.setdefault("content", "Body text.")
    return content.ArticleInput(**fields)


# --- users, blogs, clients ------------------------------------------------------------------


def test_create_user_stores_a_password_hash_and_refuses_duplicates(db: Database) -> None:
    assert content.create_user(db, "carol", "s3cret")["username"] == "carol"
    with db.session() as session:
        user = session.query(tables.User).filter_by(username="carol").one()
        assert "s3cret" not in user.password_hash and security.verify_password("s3cret", user.password_hash)
    with pytest.raises(ContentError, match="user 'carol' already exists"):
        content.create_user(db, "carol", "other")


@pytest.mark.parametrize(
    ("username", "password", "message"), [("", "pw", "username"), ("a b", "pw", "username"), ("dan", "", "password")]
)
def test_create_user_validates(db: Database, username: str, password: str, message: str) -> None:
    with pytest.raises(ContentError, match=message):
        content.create_user(db, username, password)


def test_passwords_and_secrets_are_hashed_before_the_write_transaction(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scrypt runs with no connection of the database in use: no transaction (on SQLite, no
    write lock) waits for it. Covers create-user, create-client and the seed."""
    from mkdocs_blogsvc.server import seed

    in_use: list[int] = []
    real_hash = security.hash_password

    def watched(password: str) -> str:
        in_use.append(db.engine.pool.checkedout())
        return real_hash(password)

    monkeypatch.setattr(security, "hash_password", watched)
    content.create_user(db, "dora", "dora-password")
    content.create_client(db, name="Tool", redirect_uris=["http://127.0.0.1/cb"], public=False)
    seed.seed(db)
    assert in_use == [0, 0, 0]


def test_create_blog(db: Database) -> None:
    content.create_user(db, "carol", "pw")
    blog = content.create_blog(db, owner="carol", name="Carol's", slug="carol", language="pt", description="Notas")
    assert blog["slug"] == "carol" and blog["language"] == "pt" and blog["owner"] == "carol"
    assert re.fullmatch(r"c[0-9a-z]{24}", blog["id"])  # the hosted service's CUID shape


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"owner": "nobody"}, "unknown user 'nobody'"),
        ({"language": "xx"}, "invalid language 'xx'.*ISO 639-1"),
        ({"language": "EN"}, "invalid language"),
        ({"language": "eng"}, "invalid language"),
        ({"slug": "Bad Slug"}, "invalid blog slug"),
        ({"slug": "a" * 201}, "invalid blog slug"),
        ({"slug": "alice-blog"}, "slug 'alice-blog' already exists"),
        ({"name": "  "}, r"the blog name \(--name\) must not be empty: give the blog the name its readers see"),
    ],
)
def test_create_blog_refusals(db: Database, owner: Owner, changes: dict[str, str], message: str) -> None:
    arguments = {"owner": owner.username, "name": "N", "slug": "fresh", "language": "en"} | changes
    with pytest.raises(ContentError, match=message):
        content.create_blog(db, **arguments)


def test_confidential_client_gets_a_secret_stored_hashed(db: Database) -> None:
    created = content.create_client(db, name="Site", redirect_uris=["https://site.example/cb"], public=False)
    secret = created["client_secret"]
    assert isinstance(secret, str) and len(secret) >= 40 and created["public"] is False
    with db.session() as session:
        row = session.query(tables.Client).filter_by(client_id=created["client_id"]).one()
        assert secret not in (row.client_secret_hash or "")
        assert security.verify_password(secret, row.client_secret_hash)


def test_public_client_has_no_secret(db: Database) -> None:
    created = content.create_client(
        db,
        name="CLI",
        redirect_uris=["http://127.0.0.1/callback", "http://[::1]/callback", "http://127.0.0.1/callback"],
        public=True,
    )
    assert created["client_secret"] is None and created["public"] is True
    with db.session() as session:
        row = session.query(tables.Client).filter_by(client_id=created["client_id"]).one()
        assert row.is_public and row.client_secret_hash is None
        assert row.redirect_uris == ["http://127.0.0.1/callback", "http://[::1]/callback"]


@pytest.mark.parametrize(
    ("uris", "message"),
    [
        ([], "at least one"),
        (["/callback"], "absolute URI"),
        (["https://site.example/cb#frag"], "without a fragment"),
        (["http://site.example/cb"], "plain http is allowed only for loopback"),
        (["javascript:alert(document.domain)//"], "a browser runs or reads javascript: URIs itself"),
        (["DATA:text/html,<script>x</script>"], "a browser runs or reads data: URIs itself"),
        (["file:///tmp/cb"], "a browser runs or reads file: URIs itself"),
    ],
)
def test_client_redirect_uris_are_checked(db: Database, uris: list[str], message: str) -> None:
    with pytest.raises(ContentError, match=message):
        content.create_client(db, name="X", redirect_uris=uris, public=True)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.5.6.7", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("localhost.example", False),
        ("", False),
    ],
)
def test_plain_http_redirect_uris_need_a_loopback_host(db: Database, host: str, loopback: bool) -> None:
    """One rule (`clients.is_loopback_host`) for client registration and for `server run --host`."""
    assert is_loopback_host(host) is loopback
    uri = f"http://{f'[{host}]' if ':' in host else host}:5000/callback"
    if loopback:
        assert content.create_client(db, name="X", redirect_uris=[uri], public=True)["redirect_uris"] == [uri]
    else:
        with pytest.raises(ContentError):
            content.create_client(db, name="X", redirect_uris=[uri], public=True)


# --- articles -------------------------------------------------------------------------------


def test_add_article_is_published_and_served_by_the_api(db: Database, owner: Owner, api: httpx.Client) -> None:
    shown = content.add_article(
        db,
        owner.blog_slug,
        article(
            title="  Olá, Mundo: 2nd try!\n",
            description="Sum",
            tags=["a", " b ", "a", ""],
            seo_keywords=["k"],
            seo_score=7.5,
            schema_org_json={"@type": "BlogPosting"},
            cover_image=COVER,
        ),
        base_url=BASE,
    )
    assert shown["status"] == "published"
    assert shown["slug"] == "ola-mundo-2nd-try"
    assert shown["title"] == "Olá, Mundo: 2nd try!"  # stripped, as the hash covers it
    assert shown["tags"] == ["a", "b"]
    served = api.get(f"/api/v1/articles/{shown['id']}").json()["article"]
    assert served == {key: value for key, value in shown.items() if key != "status"}
    assert api.get(served["coverImageUrl"].removeprefix(BASE)).content == COVER


def test_slugs_are_unique_within_a_blog(db: Database, owner: Owner) -> None:
    slugs = [content.add_article(db, owner.blog_slug, article(title="Same Title"))["slug"] for _ in range(3)]
    assert slugs == ["same-title", "same-title-2", "same-title-3"]
    assert content.add_article(db, owner.blog_slug, article(title="¿¡!?"))["slug"] == "article"
    long_title = "word " * 40
    slug = content.add_article(db, owner.blog_slug, article(title=long_title))["slug"]
    assert len(slug) <= content.MAX_SLUG_LENGTH and not slug.endswith("-") and slug.startswith("word-word")


def test_inline_references_are_rewritten_and_unreferenced_images_appended(db: Database, owner: Owner) -> None:
    shown = content.add_article(
        db,
        owner.blog_slug,
        article(content='See ![second](inline:2 "title") then ![again](inline:2).', inline_images=[IMAGE_A, IMAGE_B]),
        base_url=BASE,
    )
    with db.session() as session:
        row = session.get(tables.Article, shown["id"])
        assert row is not None
        key_a, key_b = row.inline_media_keys[1], row.inline_media_keys[0]
        assert row.content == (
            f'See ![second]({tables.MEDIA_PLACEHOLDER}{key_b} "title") then ![again]({tables.MEDIA_PLACEHOLDER}{key_b}).'
            f"\n\n![]({tables.MEDIA_PLACEHOLDER}{key_a})\n"
        )
    assert shown["inlineImageUrls"] == [f"{BASE}/media/{key_b}", f"{BASE}/media/{key_a}"]
    assert f"![again]({BASE}/media/{key_b})" in shown["content"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": "![x](inline:2)", "inline_images": [IMAGE_A]}, "inline:2 but 1 inline image"),
        ({"content": "![x](inline:1)"}, "inline:1 but 0 inline image"),
        ({"content": "![x](inline:0)", "inline_images": [IMAGE_A]}, "inline:0 but 1 inline image"),
        ({"content": f"![x]({tables.MEDIA_PLACEHOLDER}{'0' * 32}.png)"}, "unknown media key"),
        ({"content": f"![x]({tables.MEDIA_PLACEHOLDER}../etc)"}, "unknown media key"),
        ({"cover_image": b"GIF8 not really"}, "cover image: not an image"),
        ({"inline_images": [IMAGE_A, b"<svg/>"]}, "inline image 2: SVG images are refused"),
        ({"seo_score": 10.5}, "outside 0..10"),
        ({"seo_score": -1.0}, "outside 0..10"),
        ({"seo_score": float("nan")}, "outside 0..10"),
        ({"title": "   "}, r"the title \(--title\) must not be empty: give the article a title"),
        (
            {"content": "\n"},
            r"the content \(--content or --content-file\) must not be empty: give the article its Markdown",
        ),
        ({"schema_org_json": ["not", "an", "object"]}, "JSON object"),
    ],
)
def test_article_refusals_leave_nothing_behind(
    db: Database, owner: Owner, fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ContentError, match=message):
        content.add_article(db, owner.blog_slug, article(**fields))
    with db.session() as session:
        assert session.query(tables.Article).count() == 0
        assert session.query(tables.Media).count() == 0


@pytest.mark.parametrize("score", [0.0, 10.0])
def test_seo_score_bounds_are_accepted(db: Database, owner: Owner, api: httpx.Client, score: float) -> None:
    """The spec's range is 0 to 10, both ends included."""
    shown = content.add_article(db, owner.blog_slug, article(seo_score=score))
    assert api.get(f"/api/v1/articles/{shown['id']}").json()["article"]["seoScore"] == score


def test_add_article_to_unknown_blog(db: Database) -> None:
    with pytest.raises(ContentError, match="unknown blog 'nope'"):
        content.add_article(db, "nope", article())


def test_a_draft_never_appears_until_published(db: Database, owner: Owner, api: httpx.Client) -> None:
    draft = content.add_article(db, owner.blog_slug, article(), draft=True)
    assert draft["status"] == "draft" and draft["publishedAt"] is None
    assert api.get("/api/v1/articles").json()["articles"] == []
    db.advance_clock(60)
    published = content.publish(db, draft["id"])
    assert published["status"] == "published"
    assert published["publishedAt"] == published["updatedAt"] != draft["updatedAt"]
    assert [a["id"] for a in api.get("/api/v1/articles").json()["articles"]] == [draft["id"]]


def test_unpublish_then_publish_keeps_the_first_publication_date(db: Database, owner: Owner, api: httpx.Client) -> None:
    first = content.add_article(db, owner.blog_slug, article())
    known = [{"id": first["id"], "contentHash": first["contentHash"]}]
    assert content.unpublish(db, first["id"])["status"] == "unpublished"
    assert api.get(f"/api/v1/articles/{first['id']}").status_code == 404
    assert api.post("/api/v1/sync", json={"knownArticles": known}).json()["deleted"] == [first["id"]]
    db.advance_clock(600)
    again = content.publish(db, first["id"])
    assert again["publishedAt"] == first["publishedAt"] and again["updatedAt"] == first["updatedAt"]
    assert api.post("/api/v1/sync", json={"knownArticles": known}).json() | {"syncedAt": None} == {
        "new": [],
        "updated": [],
        "deleted": [],
        "syncedAt": None,
    }


def test_update_changes_fields_hash_and_updated_at_but_not_the_slug(
    db: Database, owner: Owner, api: httpx.Client
) -> None:
    first = content.add_article(
        db, owner.blog_slug, article(description="Old", tags=["x"], seo_score=3.0, cover_image=COVER)
    )
    db.advance_clock(120)
    updated = content.update_article(
        db, first["id"], content.ArticleInput(title="New Title", description="", seo_score=None)
    )
    assert updated["slug"] == first["slug"]
    assert (updated["title"], updated["description"], updated["seoScore"]) == ("New Title", None, None)
    assert updated["tags"] == ["x"] and updated["coverImageUrl"] == first["coverImageUrl"]  # untouched
    assert updated["contentHash"] != first["contentHash"]
    assert updated["updatedAt"] > first["updatedAt"] and updated["publishedAt"] == first["publishedAt"]
    sync = api.post(
        "/api/v1/sync", json={"knownArticles": [{"id": first["id"], "contentHash": first["contentHash"]}]}
    ).json()
    assert [a["id"] for a in sync["updated"]] == [first["id"]]

    cleared = content.update_article(
        db, first["id"], content.ArticleInput(tags=[], cover_image=None, schema_org_json=None)
    )
    assert cleared["tags"] == [] and cleared["coverImageUrl"] is None and cleared["schemaOrgJson"] is None


def test_update_appends_new_inline_images_to_the_existing_content(db: Database, owner: Owner) -> None:
    first = content.add_article(
        db, owner.blog_slug, article(content="Intro ![a](inline:1)", inline_images=[IMAGE_A]), base_url=BASE
    )
    updated = content.update_article(db, first["id"], content.ArticleInput(inline_images=[IMAGE_B]), base_url=BASE)
    assert updated["inlineImageUrls"][0] == first["inlineImageUrls"][0]
    assert len(updated["inlineImageUrls"]) == 2
    assert updated["content"].endswith(f"![]({updated['inlineImageUrls'][1]})\n")
    replaced = content.update_article(
        db, first["id"], content.ArticleInput(content="No images any more."), base_url=BASE
    )
    assert replaced["inlineImageUrls"] == []


def test_delete_removes_the_row_and_sync_reports_it(db: Database, owner: Owner, api: httpx.Client) -> None:
    first = content.add_article(db, owner.blog_slug, article())
    assert content.delete_article(db, first["id"]) == {"id": first["id"], "slug": first["slug"], "deleted": True}
    with db.session() as session:
        assert session.get(tables.Article, first["id"]) is None
    sync = api.post(
        "/api/v1/sync", json={"knownArticles": [{"id": first["id"], "contentHash": first["contentHash"]}]}
    ).json()
    assert sync["deleted"] == [first["id"]]


@pytest.mark.parametrize("action", [content.publish, content.unpublish, content.delete_article])
def test_unknown_article_id(db: Database, action: object) -> None:
    with pytest.raises(ContentError, match="unknown article 'nope'"):
        action(db, "nope")


def test_advance_clock_moves_forward_only(db: Database) -> None:
    before = db.now()
    result = content.advance_clock(db, 3601)
    assert result["offset_seconds"] == 3601
    assert db.now() - before >= timedelta(seconds=3601)
    with pytest.raises(ContentError, match="only moves forward"):
        content.advance_clock(db, -1)
    assert content.advance_clock(db, 0)["offset_seconds"] == 3601


def test_ids_have_the_cuid_shape_and_do_not_repeat() -> None:
    ids = [security.new_cuid() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"c[0-9a-z]{24}", value) for value in ids)
    assert len({value[1] for value in ids}) == 36  # the body is spread over every base-36 digit
