"""`/api/oauth/authorize`: the sign-in and consent pages a person sees during authorization.

One URL serves the whole dialogue. The authorization request stays in the query string; the
forms post back to the same URL, so every step re-validates the request with Authlib before it
acts. Steps: validate the request (an unknown client or redirect URI gets an error page and
never a redirect, RFC 6749 4.1.2.1; other errors redirect with `error` and `state`), sign in if
there is no session, then approve or deny for one of the user's blogs.

Automation contract (scripts and `consent_driver` rely on it): the sign-in form has fields
`username` and `password`; the consent form has `<select name="blog_id">` (each option carries
`data-slug`) and submit buttons `name="decision"` valued `approve` and `deny`; every form has a
hidden `csrf_token`.

The browser session is Flask's signed cookie: it holds the signed-in user id and the CSRF token.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749.errors import OAuth2Error
from flask import Flask, Response, current_app, render_template, request
from flask import session as browser_session
from sqlalchemy import select
from sqlalchemy.orm import Session

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.grants import Approval, AuthorizationCodeGrant
from mkdocs_blogsvc.server.oauth_db import transaction
from mkdocs_blogsvc.server.ratelimit import RateLimiter

if TYPE_CHECKING:
    from mkdocs_blogsvc.server.oauth import ServiceAuthorizationServer

AUTHORIZE_PATH = "/api/oauth/authorize"
#: On every response of the authorization endpoint (pages and redirects). No `form-action`:
#: browsers apply it to the redirect that follows a form post, which goes to the client.
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def register(app: Flask, db: Database, server: ServiceAuthorizationServer) -> None:
    """Attach `GET`/`POST /api/oauth/authorize` to the app."""

    @app.route(AUTHORIZE_PATH, methods=["GET", "POST"])
    def authorize() -> Response:
        # Only an approval writes (the authorization code); showing pages and checking a
        # password (scrypt, slow on purpose) must not hold the database's write lock.
        with transaction(db, write=_is_approval()) as tx:
            response = _authorize(server, tx.session)
        response.headers.update(PAGE_HEADERS)
        return response


def _authorize(server: ServiceAuthorizationServer, session: Session) -> Response:
    try:
        grant: AuthorizationCodeGrant = server.get_consent_grant(end_user=None)
    except OAuth2Error as error:
        if error.redirect_uri:
            return server.handle_error_response(None, error)
        return _error_page(
            "This authorization request is not valid",
            "The application that sent you here made a request this service cannot accept. "
            "For your safety you have not been sent back to it.",
            detail=f"{error.error}: {error.description}",
        )
    user = _signed_in_user(session)
    if request.method == "GET":
        return _consent_page(session, grant, user) if user else _sign_in_page()
    if not _csrf_valid():
        return _error_page(
            "This form has expired",
            "The page was open too long, the service restarted, or the form was not sent from this site.",
            restart=True,
        )
    form = request.form
    if "switch_account" in form:
        browser_session.pop("user_id", None)
        return _reload()
    if "username" in form:
        return _sign_in(session)
    decision = form.get("decision")
    if decision == "deny":  # also offered on the sign-in page, as "Cancel"
        response: Response = server.create_authorization_response(grant=grant, grant_user=None)
        return response
    if user is None:
        return _sign_in_page()
    if decision != "approve":
        return _error_page("The form was not understood", "Choose Approve or Deny.", restart=True)
    blog = session.scalar(
        select(tables.Blog).where(tables.Blog.id == form.get("blog_id", ""), tables.Blog.owner_id == user.id)
    )
    if blog is None:
        return _consent_page(session, grant, user, error="Choose one of your blogs.", status=400)
    response = server.create_authorization_response(grant=grant, grant_user=Approval(user.id, blog.id))
    return response


def _is_approval() -> bool:
    return request.method == "POST" and request.form.get("decision") == "approve"


def _sign_in(session: Session) -> Response:
    """Check the credentials; on success start a fresh session (new CSRF token) and reload."""
    username = request.form.get("username", "")
    limiter: RateLimiter = current_app.extensions["blogsvc_limiter"]
    # Failed attempts are limited per account and per address; while locked out, no password
    # is checked at all (a brute-force target otherwise). Unknown usernames count the same.
    # Each attempt is counted before its password is checked (one atomic upsert), so attempts
    # sent at once cannot all pass while the slow hash runs; an attempt refused, or with the
    # right password, gives its counts back (a locked address then cannot lock accounts too).
    keys = (("signin_account", username[:150].casefold()), ("signin_address", request.remote_addr or "unknown"))
    for counted, (name, key) in enumerate(keys, start=1):
        verdict = limiter.hit(name, key)
        if not verdict.allowed:
            for taken_back in keys[:counted]:
                limiter.forgive(*taken_back)
            minutes = -(-verdict.retry_after // 60)
            who = "this account" if name == "signin_account" else "this address"
            page = _sign_in_page(
                error=f"Too many failed sign-ins for {who}: try again in {minutes} minutes.", username=username
            )
            page.status_code = 429
            page.headers["Retry-After"] = str(verdict.retry_after)
            return page
    user = session.scalar(select(tables.User).where(tables.User.username == username))
    # Hash even for an unknown user, so the answer time does not reveal which usernames exist.
    password_ok = security.verify_password(
        request.form.get("password", ""), user.password_hash if user else _dummy_hash()
    )
    if user is None or not password_ok:
        return _sign_in_page(error="Wrong username or password.", username=username)
    for name, key in keys:
        limiter.forgive(name, key)
    browser_session.clear()
    browser_session["user_id"] = user.id
    return _reload()


def _signed_in_user(session: Session) -> tables.User | None:
    user_id = browser_session.get("user_id")
    return session.get(tables.User, user_id) if isinstance(user_id, int) else None


def _sign_in_page(*, error: str | None = None, username: str = "") -> Response:
    html = render_template(
        "oauth_sign_in.html", form_action=_self_url(), csrf_token=_csrf_token(), error=error, username=username
    )
    return Response(html, mimetype="text/html")


def _consent_page(
    session: Session, grant: AuthorizationCodeGrant, user: tables.User, *, error: str | None = None, status: int = 200
) -> Response:
    oauth_request = grant.request
    blogs = session.scalars(select(tables.Blog).where(tables.Blog.owner_id == user.id).order_by(tables.Blog.name)).all()
    html = render_template(
        "oauth_consent.html",
        form_action=_self_url(),
        csrf_token=_csrf_token(),
        client_name=oauth_request.client.name,
        scopes=[(name, security.SCOPES[name]) for name in oauth_request.scope.split()],
        blogs=blogs,
        username=user.username,
        return_host=urlsplit(oauth_request.payload.redirect_uri).netloc,
        error=error,
    )
    return Response(html, status=status, mimetype="text/html")


def _error_page(title: str, message: str, *, detail: str | None = None, restart: bool = False) -> Response:
    html = render_template(
        "oauth_error.html", title=title, message=message, detail=detail, restart_url=_self_url() if restart else None
    )
    return Response(html, status=400, mimetype="text/html")


def _reload() -> Response:
    """Post/Redirect/Get back to the same authorization request."""
    return Response(status=303, headers={"Location": _self_url()})


def _self_url() -> str:
    """This request's path and query: the authorization request, kept across the dialogue."""
    return request.script_root + request.full_path.rstrip("?")


def _csrf_token() -> str:
    token = browser_session.get("csrf_token")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        browser_session["csrf_token"] = token
    return token


def _csrf_valid() -> bool:
    expected = browser_session.get("csrf_token")
    sent = request.form.get("csrf_token", "")
    return isinstance(expected, str) and hmac.compare_digest(expected.encode(), sent.encode())


@functools.cache
def _dummy_hash() -> str:
    return security.hash_password(secrets.token_urlsafe(16))
