"""The application factory of the reference service."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from flask import Flask, has_request_context, request
from flask.sessions import SecureCookieSessionInterface
from werkzeug.middleware.proxy_fix import ProxyFix

from mkdocs_blogsvc.server import api, blogs, cors, faults, media, oauth, ratelimit
from mkdocs_blogsvc.server.bodies import DrainUnreadInput
from mkdocs_blogsvc.server.database import REQUEST_LOCK_TIMEOUT, Database
from mkdocs_blogsvc.server.ratelimit import Limit, RateLimiter
from mkdocs_blogsvc.server.serialize import PUBLIC_URL_CONFIG, normalize_public_url

#: Request bodies above this are refused with 413 before any parsing (spec: "not shown").
MAX_REQUEST_BYTES = 1024 * 1024
#: How long a sign-in on the authorization pages is accepted (see create_app).
SIGN_IN_LIFETIME = timedelta(hours=1)


def create_app(
    db: Database | str | os.PathLike[str],
    *,
    secret_key: str | None = None,
    public_url: str | None = None,
    rate_limits: Mapping[str, Limit] | None = None,
    proxy_hops: int = 0,
    request_threads: int | None = None,
    **config: Any,
) -> Flask:
    """Build the service on a database (a `Database`, a SQLAlchemy URL, or a SQLite file path).

    `secret_key` signs the browser session (sign-in, CSRF); a random one is made when absent,
    which only means sign-ins do not survive a restart.

    `public_url` (such as `https://blog.example.com`) is the address named in media URLs, in the
    OpenAPI document and on the home page. Without it they name the address each request came
    to, so two host names of one service (or a proxy) serve different URLs, and so different
    `contentHash` values. Raises ValueError for a URL that is not an http(s) address.

    `request_threads` is how many requests this process serves at once (gunicorn's `--threads`;
    None: a thread per request, as Werkzeug's server and the test client do). On SQLite it sizes
    the bulkhead that keeps a thread free for reads while writers wait for the lock (`bulkhead`).
    """
    public = None if public_url is None else normalize_public_url(public_url)
    if not isinstance(db, Database):
        db = Database.open(os.fspath(db))  # as `--db` reads it: postgres:// means psycopg, one-line errors
    db.lock_timeout = REQUEST_LOCK_TIMEOUT  # a request waits seconds, not half a minute: faults.py
    db.bound_writers(request_threads)  # SQLite: waiting writers never take every thread (bulkhead.py)
    app = Flask(__name__)
    app.session_interface = _SessionInterface()
    app.config.update(
        SECRET_KEY=secret_key or secrets.token_hex(32),
        MAX_CONTENT_LENGTH=MAX_REQUEST_BYTES,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        # Behind a TLS proxy the app sees http; the public URL says what browsers use.
        SESSION_COOKIE_SECURE=bool(public and public.startswith("https://")),
        # Flask refuses a signed session cookie older than this: a sign-in lasts one authorization
        # dialogue, and a copied cookie (nothing on the server can revoke it) signs in for an hour at most.
        PERMANENT_SESSION_LIFETIME=SIGN_IN_LIFETIME,
        JSON_SORT_KEYS=False,
    )
    app.config.update(config)
    app.config[PUBLIC_URL_CONFIG] = public
    app.extensions["blogsvc_db"] = db
    app.extensions["blogsvc_limiter"] = RateLimiter(db, {**ratelimit.DEFAULTS, **(rate_limits or {})})
    app.wsgi_app = DrainUnreadInput(app.wsgi_app)  # type: ignore[method-assign]  # Flask's way to wrap it
    if proxy_hops:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxy_hops, x_proto=proxy_hops)  # type: ignore[method-assign]  # Flask's way to wrap it
    oauth.register(app, db)
    api.register(app, db)
    media.register(app, db)
    blogs.register(app, db)
    faults.register(app)
    ratelimit.register(app)
    cors.register(app)
    return app


class _SessionInterface(SecureCookieSessionInterface):
    """The sign-in cookie is `Secure` when the public URL is https, and also whenever the request
    itself came over https (a TLS proxy trusted with `--proxy-hops`, without `--public-url`)."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(super().get_cookie_secure(app) or (has_request_context() and request.is_secure))
