"""The reference Blog Content Service: a complete, spec-faithful implementation (extra `[server]`).

`create_app(...)` builds the Flask (WSGI) application; tests mount it in-process with
`httpx.WSGITransport` or run it as a process with `mkdocs-blogsvc server run`.
"""

from mkdocs_blogsvc.server.app import create_app

__all__ = ["create_app"]
