"""Drive the service's sign-in and consent pages over HTTP, as a script would.

Tests, the `demo` command and CLI tests use it in place of a browser. It relies only on the
pages' automation contract (see `pages`): a form with `username`/`password`, then a form with
`<select name="blog_id">` (options carry `data-slug`) and buttons `name="decision"`, each with a
hidden `csrf_token`. It never follows the final redirect: the caller decides whether to deliver
it (for instance to a loopback listener).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

from mkdocs_blogsvc.server.errors import ConsentDriverError


@dataclass
class _Form:
    action: str
    fields: dict[str, str] = field(default_factory=dict)
    #: For each <select>: its options as (value, data-slug) pairs, in page order.
    selects: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    #: For each button name: the values it can submit.
    buttons: dict[str, list[str]] = field(default_factory=dict)


class _FormParser(HTMLParser):
    """Collects the forms of a page and the text of its alerts (`data-error` elements)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[_Form] = []
        self.alerts: list[str] = []
        self._select: str | None = None
        self._alert_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        if "data-error" in attr:
            self._alert_depth = 1
            self.alerts.append("")
        elif self._alert_depth:
            self._alert_depth += 1
        if tag == "form":
            self.forms.append(_Form(action=attr.get("action", "")))
        if not self.forms:
            return
        form, name = self.forms[-1], attr.get("name")
        if tag == "input" and name:
            form.fields[name] = attr.get("value", "")
        elif tag == "select" and name:
            self._select = name
            form.selects[name] = []
        elif tag == "option" and self._select:
            form.selects[self._select].append((attr.get("value", ""), attr.get("data-slug")))
        elif tag == "button" and name:
            form.buttons.setdefault(name, []).append(attr.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        if self._alert_depth:
            self._alert_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._alert_depth:
            self.alerts[-1] += data


def _parse(page: httpx.Response) -> _FormParser:
    parser = _FormParser()
    parser.feed(page.text)
    parser.close()
    return parser


def _find_form(parser: _FormParser, *, field_name: str) -> _Form | None:
    return next((form for form in parser.forms if field_name in form.fields), None)


def _describe(page: httpx.Response, parser: _FormParser) -> str:
    alerts = " ".join(" ".join(text.split()) for text in parser.alerts if text.strip())
    return f"HTTP {page.status_code}" + (f": {alerts}" if alerts else "")


def _location(response: httpx.Response) -> str:
    return urljoin(str(response.url), response.headers["Location"])


def drive_consent(
    authorize_url: str,
    *,
    username: str,
    password: str,
    blog_slug: str | None = None,
    approve: bool = True,
    transport: httpx.BaseTransport | None = None,
) -> str:
    """Sign in, choose a blog and approve (or deny); return the final redirect's Location.

    The Location is the client's `redirect_uri` with `code` and `state` (or `error`). When the
    service redirects at once (an invalid request that may be redirected), that Location is
    returned without signing in. `blog_slug` picks the blog; by default the first one listed.
    Raises `ConsentDriverError` when a page is not the one expected.
    """
    with httpx.Client(transport=transport, follow_redirects=False, timeout=30) as client:
        page = client.get(authorize_url)
        if page.is_redirect:
            return _location(page)
        parser = _parse(page)
        sign_in = _find_form(parser, field_name="password")
        if sign_in is not None:
            data = {**sign_in.fields, "username": username, "password": password}
            answer = client.post(urljoin(str(page.url), sign_in.action), data=data)
            if not answer.is_redirect:
                raise ConsentDriverError(f"sign-in as {username!r} failed ({_describe(answer, _parse(answer))})")
            page = client.get(_location(answer))
            parser = _parse(page)
        if _find_form(parser, field_name="password") is not None:
            raise ConsentDriverError(f"still asked to sign in after signing in ({_describe(page, parser)})")
        consent = next((form for form in parser.forms if "decision" in form.buttons), None)
        if consent is None:
            raise ConsentDriverError(f"no consent form on the authorization page ({_describe(page, parser)})")
        decision = "approve" if approve else "deny"
        if decision not in consent.buttons["decision"]:
            raise ConsentDriverError(f"the consent page offers no {decision!r} ({_describe(page, parser)})")
        data = {**consent.fields, "decision": decision}
        if approve:
            data["blog_id"] = _choose_blog(consent.selects.get("blog_id", []), blog_slug)
        answer = client.post(urljoin(str(page.url), consent.action), data=data)
        if not answer.is_redirect:
            raise ConsentDriverError(f"the consent form was refused ({_describe(answer, _parse(answer))})")
        return _location(answer)


def _choose_blog(options: list[tuple[str, str | None]], blog_slug: str | None) -> str:
    if not options:
        raise ConsentDriverError("the consent form lists no blog")
    if blog_slug is None:
        return options[0][0]
    for value, slug in options:
        if slug == blog_slug:
            return value
    listed = ", ".join(slug or value for value, slug in options)
    raise ConsentDriverError(f"blog {blog_slug!r} is not among the user's blogs ({listed})")
