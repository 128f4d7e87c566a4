"""The data endpoints (`/api/v1/...`), the OpenAPI document, and JSON errors for `/api/` paths.

Only published articles of the token's blog are ever read: every query starts from
`_published(blog_id)`. Decisions where the spec is silent are listed in
the README ("Service behaviour where the spec is silent") and mirrored in the OpenAPI document (`openapi.py`).
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from flask import Blueprint, Flask, Response, current_app, request, stream_with_context
from sqlalchemy import Row, Select, func, select, update
from sqlalchemy.orm import Session
from werkzeug.exceptions import HTTPException

from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import openapi, tables
from mkdocs_blogsvc.server.bearer import Access, require_token
from mkdocs_blogsvc.server.bodies import MAX_KNOWN_ARTICLES, MAX_SYNC_BODY_BYTES, decoded_body
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ApiError
from mkdocs_blogsvc.server.responses import error_response, invalid_request, json_response
from mkdocs_blogsvc.server.serialize import ARTICLE_COLUMNS, article_json, base_url
from mkdocs_blogsvc.server.sync_answer import SyncAnswer

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
ARTICLES_SCOPE = "articles:read"
#: The browser-facing authorization endpoint keeps its HTML error pages.
_HTML_PATHS = ("/api/oauth/authorize",)
_POSITIVE_INTEGER = re.compile(r"[0-9]+")


def register(app: Flask, db: Database) -> None:
    """Attach the data endpoints, `/openapi.json` and the JSON error handlers to the app.

    Views find `db` at request time in `app.extensions["blogsvc_db"]`, where `create_app` puts it.
    """
    blueprint = Blueprint("api_v1", __name__, url_prefix="/api/v1")
    blueprint.add_url_rule("/articles", view_func=list_articles, methods=["GET"])
    blueprint.add_url_rule("/articles/<id_or_slug>", view_func=get_article, methods=["GET"])
    blueprint.add_url_rule("/sync", view_func=sync, methods=["POST"])
    blueprint.add_url_rule("/status", view_func=status, methods=["GET"])
    app.register_blueprint(blueprint)
    app.add_url_rule("/openapi.json", "openapi", _openapi)
    app.register_error_handler(ApiError, error_response)
    app.register_error_handler(HTTPException, _http_error)
    app.after_request(_no_store)
    app.after_request(_request_codings)


# --- views ---------------------------------------------------------------------------------


@require_token(ARTICLES_SCOPE)
def list_articles(access: Access) -> Response:
    page = _positive_int("page", 1)
    limit = _positive_int("limit", DEFAULT_LIMIT)
    if limit > MAX_LIMIT:
        raise invalid_request(f"limit must be an integer from 1 to {MAX_LIMIT}")
    rows, total = _listing_page(access.blog_id, (page - 1) * limit, limit)
    base = base_url()
    return json_response(
        {
            "articles": [article_json(article, base) for article in rows],
            "pagination": {"page": page, "limit": limit, "total": total, "totalPages": -(-total // limit)},
        }
    )


@require_token(ARTICLES_SCOPE)
def get_article(access: Access, id_or_slug: str) -> Response:
    with _db().session() as session:
        article = session.scalars(_published(access.blog_id).where(tables.Article.id == id_or_slug)).first()
        if article is None:
            article = session.scalars(_published(access.blog_id).where(tables.Article.slug == id_or_slug)).first()
    if article is None:
        raise ApiError(404, "not_found", "Article not found")
    return json_response({"article": article_json(article, base_url())})


@require_token(ARTICLES_SCOPE)
def sync(access: Access) -> Response:
    """Compare, then record `lastSyncAt` in a short write transaction: the long read of a large
    blog never holds the write lock. The answer streams from spools (`sync_answer`)."""
    known = _known_articles()
    base = base_url()
    answer = SyncAnswer()
    try:
        with _db().session() as session:
            answer.compute(session, access.blog_id, _newest_first(_published(access.blog_id)), known, base)
        now = _db().now()
        with _db().session(write=True) as session:
            session.execute(update(tables.Grant).where(tables.Grant.id == access.grant_id).values(last_sync_at=now))
    except BaseException:
        answer.close()
        raise
    return Response(stream_with_context(answer.chunks(format_timestamp(now))), mimetype="application/json")


@require_token(None)
def status(access: Access) -> Response:
    with _db().session() as session:
        grant = session.get_one(tables.Grant, access.grant_id)
        blog = session.get_one(tables.Blog, access.blog_id)
        count = _count_published(session, access.blog_id)
    return json_response(
        {
            "status": "active",
            "blog": {
                "id": blog.id,
                "name": blog.name,
                "slug": blog.slug,
                "description": blog.description or "",
                "language": blog.language,
                "articleCount": count,
            },
            "scopes": list(access.scopes),
            "connectedAt": format_timestamp(grant.connected_at),
            "lastSyncAt": format_timestamp(grant.last_sync_at) if grant.last_sync_at else None,
        }
    )


def _openapi() -> Response:
    """The OpenAPI document (no token needed: it describes, it discloses nothing)."""
    return json_response(
        openapi.document(
            base_url(),
            default_limit=DEFAULT_LIMIT,
            max_limit=MAX_LIMIT,
            max_known_articles=MAX_KNOWN_ARTICLES,
            max_body_bytes=MAX_SYNC_BODY_BYTES,
        )
    )


# --- queries and request parsing -----------------------------------------------------------


def _db() -> Database:
    db: Database = current_app.extensions["blogsvc_db"]
    return db


def _published(blog_id: str) -> Select[tables.Article]:
    return select(tables.Article).where(tables.Article.blog_id == blog_id, tables.Article.status == "published")


def _count_published(session: Session, blog_id: str) -> int:
    return session.scalar(select(func.count()).select_from(_published(blog_id).subquery())) or 0


#: An OFFSET past this is past the end of any blog (and may not fit the database's integers).
_MAX_OFFSET = 2**62


def _listing_page(blog_id: str, offset: int, limit: int) -> tuple[list[Row[Any]], int]:
    """The page's articles (plain rows, newest first) and the blog's published count, from one
    statement outside any transaction: one snapshot, and no BEGIN or COMMIT round trips.

    The page's ids come from the blog's listing index alone (an index-only scan once the table
    is vacuumed): a deep OFFSET skips index entries, not rows. Only those ids' rows are read,
    by primary key. The count rides along as an uncorrelated subquery (run once); a page past
    the end has no row to carry it, so the count is then asked for on its own.
    """
    article = tables.Article
    published = (article.blog_id == blog_id, article.status == "published")
    count = select(func.count()).select_from(article).where(*published)
    with _db().engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        if offset < _MAX_OFFSET:
            ids = _newest_first(select(article.id).where(*published)).offset(offset).limit(limit).subquery()
            query = _newest_first(
                select(*ARTICLE_COLUMNS, count.scalar_subquery().correlate(None).label("total")).join_from(
                    article, ids, article.id == ids.c.id
                )
            )
            rows = list(connection.execute(query))
            if rows:
                return rows, int(rows[0].total)
        return [], int(connection.scalar(count) or 0)


def _newest_first(query: Select[Any]) -> Select[Any]:
    """Newest publication first; equal times in descending id order, so pages never overlap."""
    return query.order_by(tables.Article.published_at.desc(), tables.Article.id.desc())


def _positive_int(name: str, default: int) -> int:
    value = request.args.get(name)
    if value is None:
        return default
    try:
        number = int(value) if _POSITIVE_INTEGER.fullmatch(value) else 0  # int() alone takes " 2", "+2", "٢"
    except ValueError:  # more digits than Python converts
        number = 0
    if number < 1:
        bound = f"from 1 to {MAX_LIMIT}" if name == "limit" else "of at least 1"
        raise invalid_request(f"{name} must be an integer {bound}")
    return number


def _known_articles() -> dict[str, set[str]]:
    """The sync body's `knownArticles` as {id: its contentHashes}, ids in first-seen order.

    An id listed twice is accepted: it is reported once, and as updated unless every listed
    hash is the current one (a client holding two different copies gets the true one).
    Anything malformed is a 400 `invalid_request` whose description names the fault.
    """
    if not request.is_json:
        raise invalid_request("Content-Type must be application/json")
    body_bytes = decoded_body(MAX_SYNC_BODY_BYTES)
    try:
        text = body_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid_request("Request body is not UTF-8 text") from None
    try:
        # No number is ever used: reading integers as floats spares the quadratic conversion
        # of a huge digit string (and Python's 4300-digit limit error).
        body = json.loads(text, parse_int=float, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise invalid_request(
            f"Request body is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except ValueError as exc:  # NaN or Infinity
        raise invalid_request(f"Request body is not valid JSON ({exc})") from None
    except RecursionError:
        raise invalid_request("Request body is not valid JSON (nested too deeply)") from None
    if not isinstance(body, dict):
        raise invalid_request("Request body must be a JSON object with a knownArticles array")
    if "knownArticles" not in body:
        raise invalid_request("knownArticles is required (an array, possibly empty)")
    entries = body["knownArticles"]
    if not isinstance(entries, list):
        raise invalid_request("knownArticles must be an array")
    if len(entries) > MAX_KNOWN_ARTICLES:
        raise invalid_request(f"knownArticles has {len(entries)} entries; the maximum is {MAX_KNOWN_ARTICLES}")
    known: dict[str, set[str]] = {}
    for index, entry in enumerate(entries):  # 100,000 of them: the usual entry costs two checks
        if not (
            isinstance(entry, dict)
            and isinstance(article_id := entry.get("id"), str)
            and isinstance(held := entry.get("contentHash"), str)
        ):
            raise _malformed_entry(index, entry)
        known.setdefault(article_id, set()).add(held)
    return known


def _malformed_entry(index: int, entry: object) -> ApiError:
    """The 400 naming what is wrong with `knownArticles[index]`."""
    where = f"knownArticles[{index}]"
    if not isinstance(entry, dict):
        return invalid_request(f"{where} must be an object with string fields id and contentHash")
    key = "id" if not isinstance(entry.get("id"), str) else "contentHash"
    return invalid_request(f"{where}.{key} must be a string")


def _reject_constant(name: str) -> NoReturn:
    """Python's json module accepts NaN and Infinity; RFC 8259 does not."""
    raise ValueError(f"{name} is not a JSON value")


# --- errors and headers ----------------------------------------------------------------------

_ERROR_CODES = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


def _http_error(error: HTTPException) -> Any:
    """Werkzeug's HTML error pages become the spec's JSON Error object under `/api/`."""
    if not request.path.startswith("/api/") or request.path in _HTML_PATHS:
        return error
    code = error.code or 500
    headers = {}
    if code == 405:
        allowed = dict(error.get_headers()).get("Allow", "")
        headers["Allow"] = allowed
        description = f"Method {request.method} is not allowed here; allowed: {allowed}"
    elif code == 404:
        description = "No endpoint at this path"
    elif code == 413:
        description = f"Request body exceeds the limit of {request.max_content_length} bytes"
    elif code >= 500:
        description = "The server hit an unexpected error; it has been logged"
    else:
        description = error.description or error.name
    fallback = "server_error" if code >= 500 else re.sub(r"\W+", "_", (error.name or "error").lower())
    return json_response({"error": _ERROR_CODES.get(code, fallback), "error_description": description}, code, headers)


def _no_store(response: Response) -> Response:
    """Data answers are per-token and change with every publication: never cache them (RFC 9111
    5.2.2.5). Nor any answer of the token endpoint, its refusals by size, method, rate or load
    included (RFC 6749 5.1 and 5.2: `no-store`, and `Pragma: no-cache` for HTTP/1.0 caches)."""
    if request.path.startswith("/api/v1/") or request.path == "/api/v1":
        response.headers["Cache-Control"] = "no-store"
    elif request.path == "/api/oauth/token":
        response.headers["Cache-Control"] = "no-store"
        response.headers["Pragma"] = "no-cache"
    return response


#: The codings the sync endpoint takes in request bodies (`bodies.decoded_body`).
SYNC_REQUEST_CODINGS = "gzip"


def _request_codings(response: Response) -> Response:
    """Every answer of the sync endpoint, its 415 included, says that it takes gzip bodies
    (`Accept-Encoding` on a response, RFC 7694 3): the spec shows plain bodies only, so a
    client compresses only for a service that says so."""
    if request.path == "/api/v1/sync":
        response.headers["Accept-Encoding"] = SYNC_REQUEST_CODINGS
    return response
