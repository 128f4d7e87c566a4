"""The service's content layer: where users, blogs, clients and articles are created and changed.

Everything that writes content goes through here: the `server admin` commands (`cli`), the
sample blog (`seed`) and `mkdocs-blogsvc demo`. Each public function takes the `Database`,
validates its input, runs in one transaction and returns the JSON-ready dict the command
prints. Every refusal is a `ContentError` whose message is one line a person can act on. The
`insert_*` functions work inside a caller's session (the seed builds a whole blog in one
transaction with them). Passwords and client secrets are hashed before that transaction opens
(`new_password_hash`, `new_client_secret`): scrypt never runs while the write lock is held.

Articles, as the commands write them:
- the slug is derived from the title when the article is created (lowercase ASCII, `a-z0-9`
  and `-`, made unique in the blog with `-2`, `-3`...) and then kept: a later title change does
  not move the article's URL. A slug given explicitly (`ArticleInput.slug`, `--slug`) is checked
  like every slug and must be free in the blog: it is never suffixed silently;
- an article is named by its id or by its slug (`find_article`): ids are tried first, a slug
  used in several blogs needs the blog named;
- inline images are stored with `media.store_image`; the content refers to the N-th image given
  with `--inline-image` as `![alt](inline:N)` (1-based), rewritten to the stored form
  `blogsvc-media:<key>`; images the content does not refer to are appended to its end as
  `![](blogsvc-media:<key>)`; `inlineImageUrls` lists the hosted images the content shows, in
  order of first appearance;
- `publishedAt` is set the first time an article is published and kept afterwards;
  `updatedAt` moves on every update (and on first publication).
"""

from __future__ import annotations

import enum
import math
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import media, security, tables
from mkdocs_blogsvc.server.clients import is_loopback_host
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ContentError, ImageError
from mkdocs_blogsvc.server.oauth_db import revoke_grant
from mkdocs_blogsvc.server.serialize import article_json

# Re-exported (`X as X`): the admin CLI and the admin tests name them through this module.
from mkdocs_blogsvc.shared import DEFAULT_BASE_URL as DEFAULT_BASE_URL
from mkdocs_blogsvc.slugs import MAX_SLUG_LENGTH as MAX_SLUG_LENGTH
from mkdocs_blogsvc.slugs import slugify

#: ISO 639-1: the two-letter codes a blog's `language` may take.
_LANGUAGE_CODES = (
    "aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de"
    " dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia"
    " id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo"
    " lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl"
    " ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk"
    " tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu"
)
LANGUAGES = frozenset(_LANGUAGE_CODES.split())
USERNAME = re.compile(r"[A-Za-z0-9_.@+-]{1,150}")
BLOG_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SEO_SCORE_RANGE = (0.0, 10.0)
_INLINE_REFERENCE = re.compile(r"(?<=\()inline:(\d+)(?=[\s)])")
_MEDIA_REFERENCE = re.compile(re.escape(tables.MEDIA_PLACEHOLDER) + r"([^\s)\"'<>\]]*)")


class Unset(enum.Enum):
    """Marks an article field that was not given (`None` is a value: it clears the field)."""

    UNSET = "unset"


UNSET = Unset.UNSET


@dataclass
class ArticleInput:
    """The fields `add_article` and `update_article` accept; UNSET ones keep their value (or default)."""

    title: str | Unset = UNSET
    #: Given: checked (`check_article_slug`) and must be free in the blog. Unset: derived from the
    #: title on creation, kept on update.
    slug: str | Unset = UNSET
    content: str | Unset = UNSET
    description: str | Unset | None = UNSET
    tags: list[str] | Unset = UNSET
    seo_keywords: list[str] | Unset = UNSET
    seo_score: float | Unset | None = UNSET
    schema_org_json: dict[str, Any] | Unset | None = UNSET
    #: Image bytes; None removes the cover.
    cover_image: bytes | Unset | None = UNSET
    #: Image bytes, referred to from the content as `inline:1`, `inline:2`...
    inline_images: list[bytes] = field(default_factory=list)


# --- users, blogs, clients ------------------------------------------------------------------


def create_user(db: Database, username: str, password: str) -> dict[str, Any]:
    now = db.now()  # before the transaction: db.now() reads on a connection of its own
    password_hash = new_password_hash(username, password)  # scrypt's 50 ms, before the write lock
    with db.session(write=True) as session:
        user = insert_user(session, username, password_hash, now)
        return {"id": user.id, "username": user.username}


def new_password_hash(username: str, password: str) -> str:
    """The stored hash of a new user's password, once the username and password are acceptable.

    Called before the write transaction opens: scrypt takes tens of milliseconds of CPU, and on
    SQLite every other writer (sign-ins, token grants, rate-limit counters) would wait for them.
    """
    if not USERNAME.fullmatch(username):
        raise ContentError("username must be 1 to 150 characters: letters, digits and _ . @ + -")
    if not password:
        raise ContentError("password must not be empty")
    return security.hash_password(password)


def insert_user(session: Session, username: str, password_hash: str, now: datetime) -> tables.User:
    """A new user whose password was hashed beforehand (`new_password_hash`)."""
    if not USERNAME.fullmatch(username):
        raise ContentError("username must be 1 to 150 characters: letters, digits and _ . @ + -")
    if session.scalar(select(tables.User.id).where(tables.User.username == username)) is not None:
        raise ContentError(f"user {username!r} already exists")
    user = tables.User(username=username, password_hash=password_hash, created_at=now)
    session.add(user)
    session.flush()
    return user


def create_blog(
    db: Database, *, owner: str, name: str, slug: str, language: str, description: str = ""
) -> dict[str, Any]:
    now = db.now()
    with db.session(write=True) as session:
        blog = insert_blog(
            session, owner=owner, name=name, slug=slug, language=language, description=description, now=now
        )
        return blog_json(blog, owner)


def insert_blog(
    session: Session, *, owner: str, name: str, slug: str, language: str, description: str, now: datetime
) -> tables.Blog:
    user = session.scalar(select(tables.User).where(tables.User.username == owner))
    if user is None:
        raise ContentError(f"unknown user {owner!r}: create it first with create-user")
    if not name.strip():
        raise ContentError("the blog name (--name) must not be empty: give the blog the name its readers see")
    if len(slug) > 200 or not BLOG_SLUG.fullmatch(slug):
        raise ContentError(f"invalid blog slug {slug!r}: use lowercase letters, digits and single hyphens")
    if language not in LANGUAGES:
        raise ContentError(
            f"invalid language {language!r}: use an ISO 639-1 code of 2 lowercase letters (en, pt, es, fr, de...)"
        )
    if session.scalar(select(tables.Blog.id).where(tables.Blog.slug == slug)) is not None:
        raise ContentError(f"a blog with slug {slug!r} already exists")
    blog = tables.Blog(
        id=security.new_cuid(),
        owner_id=user.id,
        name=name.strip(),
        slug=slug,
        description=description,
        language=language,
        created_at=now,
    )
    session.add(blog)
    session.flush()
    return blog


def blog_json(blog: tables.Blog, owner: str) -> dict[str, Any]:
    return {
        "id": blog.id,
        "slug": blog.slug,
        "name": blog.name,
        "description": blog.description,
        "language": blog.language,
        "owner": owner,
    }


def create_client(db: Database, *, name: str, redirect_uris: list[str], public: bool) -> dict[str, Any]:
    """Register an application. The secret of a confidential client is shown here, once."""
    now = db.now()
    secret = new_client_secret(public)  # hashed before the write lock, like passwords
    with db.session(write=True) as session:
        client = insert_client(session, name=name, redirect_uris=redirect_uris, secret=secret, now=now)
        return {
            "client_id": client.client_id,
            "client_secret": None if secret is None else secret.value,
            "name": client.name,
            "redirect_uris": list(client.redirect_uris),
            "public": client.is_public,
        }


@dataclass(frozen=True)
class ClientSecret:
    """A confidential client's new secret (shown once) and its stored hash."""

    value: str
    hash: str


def new_client_secret(public: bool) -> ClientSecret | None:
    """A new secret and its scrypt hash (None for a public client), made outside any transaction."""
    if public:
        return None
    value = secrets.token_hex(32)
    return ClientSecret(value, security.hash_password(value))


def insert_client(
    session: Session, *, name: str, redirect_uris: list[str], secret: ClientSecret | None, now: datetime
) -> tables.Client:
    """A new client: public when `secret` is None, else confidential with `secret` (`new_client_secret`)."""
    if not name.strip():
        raise ContentError("the client name (--name) must not be empty: give the name users see on the consent page")
    if not redirect_uris:
        raise ContentError("give at least one --redirect-uri")
    for uri in redirect_uris:
        check_redirect_uri(uri)
    client = tables.Client(
        client_id=secrets.token_hex(16),
        name=name.strip(),
        redirect_uris=list(dict.fromkeys(redirect_uris)),
        client_secret_hash=None if secret is None else secret.hash,
        is_public=secret is None,
        created_at=now,
    )
    session.add(client)
    session.flush()
    return client


#: Schemes a browser runs or reads itself instead of handing the code to an application
#: (RFC 9700 4.1; a private-use scheme such as `com.example.app:/cb` is RFC 8252 7.1's and stays).
_NO_REDIRECT_SCHEMES = frozenset({"javascript", "vbscript", "data", "blob", "file", "about"})


def check_redirect_uri(uri: str) -> None:
    """RFC 6749 3.1.2: absolute, no fragment; plain http only for loopback (RFC 8252 7.3). A
    host name, a port (0 to 65535) and no spaces or control characters, as a browser would
    follow it."""
    not_absolute = ContentError(
        f"invalid redirect URI {uri!r}: it must be an absolute URI without a fragment (a valid host and port, "
        "no spaces)"
    )
    try:
        parts = urlsplit(uri)
        _port = parts.port  # raises ValueError outside 0 to 65535
    except ValueError:  # a bracketed host that is not an IPv6 address, a port that is not one
        raise not_absolute from None
    if not parts.scheme or parts.fragment or not uri.isprintable() or " " in uri:
        raise not_absolute
    if parts.scheme in ("http", "https") and not parts.hostname:
        raise not_absolute
    if parts.scheme in _NO_REDIRECT_SCHEMES:  # urlsplit gives it in lower case
        raise ContentError(
            f"invalid redirect URI {uri!r}: a browser runs or reads {parts.scheme}: URIs itself; "
            "use https, a loopback http address or a private-use scheme (com.example.app:/callback)"
        )
    if parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
        raise ContentError(
            f"invalid redirect URI {uri!r}: plain http is allowed only for loopback hosts (127.0.0.1, [::1], localhost)"
        )


# --- articles -------------------------------------------------------------------------------


def add_article(
    db: Database, blog_slug: str, data: ArticleInput, *, draft: bool = False, base_url: str = DEFAULT_BASE_URL
) -> dict[str, Any]:
    """Create an article (published now, or a draft) and return it as the API shows it."""
    now = db.now()
    with db.session(write=True) as session:
        blog = get_blog(session, blog_slug)
        article = insert_article(session, blog, data, now=now, published_at=None if draft else now)
        return admin_article_json(article, base_url)


def insert_article(
    session: Session,
    blog: tables.Blog,
    data: ArticleInput,
    *,
    now: datetime,
    published_at: datetime | None,
    status: str | None = None,
) -> tables.Article:
    """A new article; published when `published_at` is given, else a draft (unless `status` says)."""
    if isinstance(data.title, Unset) or isinstance(data.content, Unset):
        raise ContentError("an article needs a title and a content")
    if isinstance(data.slug, Unset):
        slug = unique_slug(session, blog.id, slugify(data.title))
    else:
        slug = _free_slug(session, blog, data.slug, None)
    article = tables.Article(
        id=security.new_cuid(),
        blog_id=blog.id,
        slug=slug,
        title="",
        description=None,
        content="",
        tags=[],
        seo_keywords=[],
        inline_media_keys=[],
        status=status or ("draft" if published_at is None else "published"),
        published_at=published_at,
        updated_at=now,
        created_at=now,
    )
    _apply(session, article, data)
    session.add(article)
    session.flush()
    return article


def update_article(
    db: Database,
    article_ref: str,
    data: ArticleInput,
    *,
    blog_slug: str | None = None,
    base_url: str = DEFAULT_BASE_URL,
) -> dict[str, Any]:
    """Change the given fields of an article; `updatedAt` moves to now. The slug changes only
    when one is given (`data.slug`): a title change never moves the article's URL."""
    now = db.now()
    with db.session(write=True) as session:
        article = find_article(session, article_ref, blog_slug)
        if not isinstance(data.slug, Unset):
            blog = session.get(tables.Blog, article.blog_id)
            assert blog is not None  # a foreign key
            article.slug = _free_slug(session, blog, data.slug, article.id)
        _apply(session, article, data)
        article.updated_at = now
        return admin_article_json(article, base_url)


def publish(
    db: Database, article_ref: str, *, blog_slug: str | None = None, base_url: str = DEFAULT_BASE_URL
) -> dict[str, Any]:
    now = db.now()
    with db.session(write=True) as session:
        article = find_article(session, article_ref, blog_slug)
        if article.status != "published":
            article.status = "published"
            if article.published_at is None:
                article.published_at = article.updated_at = now
        return admin_article_json(article, base_url)


def unpublish(
    db: Database, article_ref: str, *, blog_slug: str | None = None, base_url: str = DEFAULT_BASE_URL
) -> dict[str, Any]:
    """Hide an article from the API (sync reports its id as deleted); `publish` brings it back."""
    with db.session(write=True) as session:
        article = find_article(session, article_ref, blog_slug)
        article.status = "unpublished"
        return admin_article_json(article, base_url)


def delete_article(db: Database, article_ref: str, *, blog_slug: str | None = None) -> dict[str, Any]:
    """Remove the row. Its images stay: media are shared by content and cost nothing to keep."""
    with db.session(write=True) as session:
        article = find_article(session, article_ref, blog_slug)
        session.delete(article)
        return {"id": article.id, "slug": article.slug, "deleted": True}


def admin_article_json(article: tables.Article, base_url: str) -> dict[str, Any]:
    """The article as the data API would show it, plus its `status` (`publishedAt` null for a draft)."""
    shown = article_json(article, base_url)
    if article.published_at is None:
        shown["publishedAt"] = None
    shown["status"] = article.status
    return shown


def find_article(session: Session, ref: str, blog_slug: str | None = None) -> tables.Article:
    """The article whose id is `ref`, else the one whose slug is `ref` (in `blog_slug` if given).

    Ids are tried first: they are unique on the service, while a slug is unique only within its
    blog, so a slug used in several blogs needs the blog named.
    """
    blog = None if blog_slug is None else get_blog(session, blog_slug)
    article = session.get(tables.Article, ref)
    if article is not None and (blog is None or article.blog_id == blog.id):
        return article
    query = select(tables.Article).where(tables.Article.slug == ref)
    if blog is not None:
        query = query.where(tables.Article.blog_id == blog.id)
    matches = list(session.scalars(query.limit(10)))
    if len(matches) == 1:
        return matches[0]
    if matches:
        slugs = session.scalars(select(tables.Blog.slug).where(tables.Blog.id.in_([m.blog_id for m in matches])))
        blogs = ", ".join(sorted(repr(slug) for slug in slugs))
        raise ContentError(
            f"the slug {ref!r} is used in several blogs ({blogs}): add --blog SLUG, or give the article id"
        )
    where = "" if blog is None else f" in blog {blog.slug!r}"
    raise ContentError(
        f"unknown article {ref!r}: no article{where} has this id or slug "
        "(see them with `server admin list-articles --blog SLUG --all`)"
    )


def get_blog(session: Session, blog_slug: str) -> tables.Blog:
    blog = session.scalar(select(tables.Blog).where(tables.Blog.slug == blog_slug))
    if blog is None:
        raise ContentError(f"unknown blog {blog_slug!r} (see them with `server admin list-blogs`)")
    return blog


def check_article_slug(slug: str) -> str:
    """An article slug as `slugify` makes them: `a-z0-9` words joined by single hyphens, at most
    `MAX_SLUG_LENGTH` characters."""
    if len(slug) > MAX_SLUG_LENGTH or not BLOG_SLUG.fullmatch(slug):
        raise ContentError(
            f"invalid article slug {slug!r}: use lowercase letters, digits and single hyphens, "
            f"at most {MAX_SLUG_LENGTH} characters (for example 'my-first-post')"
        )
    return slug


def _free_slug(session: Session, blog: tables.Blog, slug: str, article_id: str | None) -> str:
    """`slug`, checked, once no other article of `blog` (in any status) holds it."""
    check_article_slug(slug)
    holder = session.scalar(
        select(tables.Article.id).where(tables.Article.blog_id == blog.id, tables.Article.slug == slug)
    )
    if holder is not None and holder != article_id:
        raise ContentError(f"the slug {slug!r} is taken in blog {blog.slug!r} by article {holder}: choose another")
    return slug


def _apply(session: Session, article: tables.Article, data: ArticleInput) -> None:
    """Validate `data` and write the given fields (and images) onto `article`."""
    if not isinstance(data.title, Unset):
        if not data.title.strip():
            raise ContentError("the title (--title) must not be empty: give the article a title")
        article.title = data.title.strip()
    if not isinstance(data.description, Unset):
        article.description = data.description or None
    if not isinstance(data.tags, Unset):
        article.tags = _clean_list(data.tags)
    if not isinstance(data.seo_keywords, Unset):
        article.seo_keywords = _clean_list(data.seo_keywords)
    if not isinstance(data.seo_score, Unset):
        article.seo_score = check_seo_score(data.seo_score)
    if not isinstance(data.schema_org_json, Unset):
        if data.schema_org_json is not None and not isinstance(data.schema_org_json, dict):
            raise ContentError("schemaOrgJson must be a JSON object")
        article.schema_org_json = data.schema_org_json
    if not isinstance(data.cover_image, Unset):
        article.cover_media_key = (
            None if data.cover_image is None else _store(session, article.blog_id, data.cover_image, "cover image")
        )
    content = article.content if isinstance(data.content, Unset) else data.content
    keys = [
        _store(session, article.blog_id, image, f"inline image {n}") for n, image in enumerate(data.inline_images, 1)
    ]
    content = place_inline_images(content, keys)
    if not content.strip():
        raise ContentError("the content (--content or --content-file) must not be empty: give the article its Markdown")
    article.content = content
    article.inline_media_keys = _referenced_media(session, content)


def place_inline_images(content: str, keys: list[str]) -> str:
    """Rewrite `inline:N` references to stored keys; append the images never referred to."""
    used: set[int] = set()

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if not 1 <= number <= len(keys):
            raise ContentError(f"the content refers to inline:{number} but {len(keys)} inline image(s) were given")
        used.add(number)
        return tables.MEDIA_PLACEHOLDER + keys[number - 1]

    content = _INLINE_REFERENCE.sub(replace, content)
    extra = [f"![]({tables.MEDIA_PLACEHOLDER}{key})" for n, key in enumerate(keys, 1) if n not in used]
    if extra:
        content = content.rstrip("\n") + "\n\n" + "\n\n".join(extra) + "\n"
    return content


def _referenced_media(session: Session, content: str) -> list[str]:
    keys = list(dict.fromkeys(_MEDIA_REFERENCE.findall(content)))
    for key in keys:
        if not media.KEY_PATTERN.fullmatch(key) or session.get(tables.Media, key) is None:
            raise ContentError(f"the content refers to an unknown media key {key!r}")
    return keys


def _store(session: Session, blog_id: str, data: bytes, what: str) -> str:
    try:
        return media.store_image(session, blog_id, data)
    except ImageError as exc:
        raise ContentError(f"{what}: {exc}") from None


def _clean_list(values: list[str]) -> list[str]:
    """Stripped, without empty strings or repeats, in the order given."""
    return list(dict.fromkeys(value.strip() for value in values if value.strip()))


def check_seo_score(score: float | None) -> float | None:
    if score is None:
        return None
    low, high = SEO_SCORE_RANGE
    if not math.isfinite(score) or not low <= score <= high:
        raise ContentError(f"seo score {score:g} is outside 0..10")
    return float(score)


def unique_slug(session: Session, blog_id: str, slug: str) -> str:
    """`slug`, or `slug-2`, `slug-3`... whichever is free in the blog (any status counts)."""
    taken = set(session.scalars(select(tables.Article.slug).where(tables.Article.blog_id == blog_id)))
    candidate, number = slug, 1
    while candidate in taken:
        number += 1
        candidate = f"{slug}-{number}"
    return candidate


# --- the test clock -------------------------------------------------------------------------


def revoke_connection(db: Database, connection_id: int) -> dict[str, Any]:
    """Revoke a connection (an OAuth grant) and every token it holds: its application's next
    request is refused and its user must authorize again. For a leaked or lost refresh token
    (the spec has no revocation endpoint). Revoking a revoked connection changes nothing."""
    with db.session(write=True) as session:
        grant = session.get(tables.Grant, connection_id) if 0 < connection_id < 2**63 else None  # an id fits 64 bits
        if grant is None:
            raise ContentError(f"no connection {connection_id}: list them with list-connections")
        was_revoked = grant.revoked_at is not None
        revoke_grant(session, grant.id, db.now())
        return {"id": grant.id, "client_id": grant.client_id, "revoked": True, "alreadyRevoked": was_revoked}


#: How far ahead the test clock may run in all: 100 years (every date the service writes stays
#: in range; and as it never moves back, a typo must not leave a database unusable).
MAX_CLOCK_OFFSET = 100 * 365.25 * 86400


def advance_clock(db: Database, seconds: float) -> dict[str, Any]:
    """Move the service's clock forward (never back: expired tokens stay expired)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ContentError("the test clock only moves forward: give a number of seconds >= 0")
    offset = db.advance_clock(seconds, at_most=MAX_CLOCK_OFFSET)
    if offset is None:
        raise ContentError(
            f"the test clock may run at most 100 years ({MAX_CLOCK_OFFSET:.0f} seconds) ahead in all, and "
            f"{seconds:g} seconds more would pass that: give fewer seconds"
        )
    return {"offset_seconds": offset, "now": format_timestamp(db.now())}
