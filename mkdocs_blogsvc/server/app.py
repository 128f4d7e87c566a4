"""The application factory of the reference service."""

from __future__ import annotations

import os
import secrets
from typing import Any

from flask import Flask

from mkdocs_blogsvc.server import api, media, oauth
from mkdocs_blogsvc.server.store import Database

#: Request bodies above this are refused with 413 before any parsing (spec: "not shown").
MAX_REQUEST_BYTES = 1024 * 1024


def create_app(db: Database | str | os.PathLike[str], *, secret_key: str | None = None, **config: Any) -> Flask:
    """Build the service on a database (a `Database`, a SQLAlchemy URL, or a SQLite file path).

    `secret_key` signs the browser session (sign-in, CSRF); a random one is made when absent,
    which only means sign-ins do not survive a restart.
    """
    if not isinstance(db, Database):
        text = os.fspath(db)
        db = Database(text) if "://" in text else Database.from_path(text)
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=secret_key or secrets.token_hex(32),
        MAX_CONTENT_LENGTH=MAX_REQUEST_BYTES,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        JSON_SORT_KEYS=False,
    )
    app.config.update(config)
    app.extensions["blogsvc_db"] = db
    oauth.register(app, db)
    api.register(app, db)
    media.register(app, db)
    return app
