"""The OpenAPI 3.1 document of the data endpoints and the token endpoint (`GET /openapi.json`).

Built per request so its `servers` entry and OAuth URLs name the service's public URL, or else
the address the request came to (`serialize.base_url`). The schemas are exact (closed objects,
patterns, ranges): the tests validate every real answer against them and fuzz the service with
schemathesis, so the document cannot drift from the code.
"""

from __future__ import annotations

from typing import Any

from mkdocs_blogsvc import __version__
from mkdocs_blogsvc.server import security

JSON = "application/json"
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "type": [schema["type"], "null"]}


def _object(properties: dict[str, Any], *, closed: bool = True, required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required or list(properties)}
    if closed:
        schema["additionalProperties"] = False
    return schema


def _error(description: str, code: str | list[str], *, challenge: bool = False) -> dict[str, Any]:
    """A response carrying the Error object whose `error` is `code` (or one of several codes)."""
    error = {"const": code} if isinstance(code, str) else {"enum": code}
    response: dict[str, Any] = {
        "description": description,
        "content": {JSON: {"schema": {"allOf": [_ref("Error"), {"properties": {"error": error}}]}}},
    }
    if challenge:
        response["headers"] = {
            "WWW-Authenticate": {
                "description": "The Bearer challenge of RFC 6750 section 3.",
                "required": True,
                "schema": {"type": "string", "pattern": "^Bearer "},
            }
        }
    return response


def _refusals_of_every_operation() -> dict[str, Any]:
    """What any operation may answer besides its own: a rate limit, a fault, a busy database."""
    retry_after = {
        "Retry-After": {
            "description": "Seconds to wait before trying again.",
            "required": True,
            "schema": {"type": "string", "pattern": "^[1-9][0-9]*$"},
        }
    }
    return {
        "429": {**_error("A rate limit was passed.", "too_many_requests"), "headers": retry_after},
        "500": _error("An unexpected fault; details go to the server log.", "server_error"),
        "503": {
            **_error("The database was busy; nothing was changed.", "temporarily_unavailable"),
            "headers": retry_after,
        },
    }


def _ok(description: str, schema: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {"Cache-Control": {"required": True, "schema": {"const": "no-store"}}},
        "content": {JSON: {"schema": _ref(schema)}},
    }


def _schemas(max_limit: int, max_known_articles: int) -> dict[str, Any]:
    timestamp = {"type": "string", "format": "date-time", "pattern": TIMESTAMP_PATTERN}
    strings = {"type": "array", "items": {"type": "string"}}
    return {
        "Timestamp": {**timestamp, "description": "ISO 8601, UTC, millisecond precision."},
        "Article": _object(
            {
                "id": {
                    "type": "string",
                    "pattern": "^c[0-9a-z]{24}$",
                    "description": "CUID: c and 24 lowercase base-36 characters.",
                },
                "slug": {"type": "string", "minLength": 1},
                "title": {"type": "string"},
                "description": _nullable({"type": "string"}),
                "content": {"type": "string", "description": "Markdown; hosted images as absolute URLs."},
                "coverImageUrl": _nullable({"type": "string", "format": "uri"}),
                "inlineImageUrls": {"type": "array", "items": {"type": "string", "format": "uri"}},
                "tags": strings,
                "seoKeywords": strings,
                "seoScore": _nullable({"type": "number", "minimum": 0, "maximum": 10}),
                "schemaOrgJson": _nullable({"type": "object"}),
                "publishedAt": _ref("Timestamp"),
                "updatedAt": _ref("Timestamp"),
                "viewCount": {"type": "integer", "minimum": 0},
                "contentHash": {
                    "type": "string",
                    "pattern": "^[0-9a-f]{64}$",
                    "description": (
                        "SHA-256, lowercase hex, of the UTF-8 compact JSON array "
                        '[title, description, content, tags] (separators "," and ":", no ASCII escaping, '
                        "description null when absent), computed over the content as served."
                    ),
                },
            }
        ),
        "Pagination": _object(
            {
                "page": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": max_limit},
                "total": {"type": "integer", "minimum": 0, "description": "Published articles of the blog."},
                "totalPages": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "ceil(total / limit); 0 when total is 0.",
                },
            }
        ),
        "ArticleList": _object(
            {"articles": {"type": "array", "items": _ref("Article")}, "pagination": _ref("Pagination")}
        ),
        "ArticleEnvelope": _object({"article": _ref("Article")}),
        "KnownArticle": _object(
            {"id": {"type": "string"}, "contentHash": {"type": "string"}},
            closed=False,
        ),
        "SyncRequest": _object(
            {
                "knownArticles": {
                    "type": "array",
                    "maxItems": max_known_articles,
                    "items": _ref("KnownArticle"),
                    "description": "Every article the client holds (an id listed more than once is accepted and reported once).",
                }
            },
            closed=False,
        ),
        "SyncResponse": _object(
            {
                "new": {"type": "array", "items": _ref("Article")},
                "updated": {"type": "array", "items": _ref("Article")},
                "deleted": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Known ids with no published article in this blog (deleted, unpublished, or unknown).",
                },
                "syncedAt": _ref("Timestamp"),
            }
        ),
        "Status": _object(
            {
                "status": {"const": "active"},
                "blog": _object(
                    {
                        "id": {"type": "string"},
                        "name": {"type": "string"},
                        "slug": {"type": "string"},
                        "description": {"type": "string"},
                        "language": {"type": "string", "pattern": "^[a-z]{2}$"},
                        "articleCount": {"type": "integer", "minimum": 0},
                    }
                ),
                "scopes": {"type": "array", "items": {"type": "string"}},
                "connectedAt": _ref("Timestamp"),
                "lastSyncAt": {"oneOf": [_ref("Timestamp"), {"type": "null"}]},
            }
        ),
        "AuthorizationCodeRequest": _object(
            {
                "grant_type": {"const": "authorization_code"},
                "code": {"type": "string"},
                "redirect_uri": {"type": "string"},
                "client_id": {"type": "string"},
                "client_secret": {"type": "string", "description": "Confidential clients (or HTTP Basic)."},
                "code_verifier": {"type": "string", "description": "Required when a code_challenge was sent."},
            },
            closed=False,
            required=["grant_type", "code", "redirect_uri", "client_id"],
        ),
        "RefreshTokenRequest": _object(
            {
                "grant_type": {"const": "refresh_token"},
                "refresh_token": {"type": "string"},
                "client_id": {"type": "string"},
                "client_secret": {"type": "string", "description": "Confidential clients (or HTTP Basic)."},
            },
            closed=False,
            required=["grant_type", "refresh_token", "client_id"],
        ),
        "TokenResponse": _object(
            {
                "access_token": {"type": "string", "pattern": f"^{security.ACCESS_TOKEN_PREFIX}"},
                "token_type": {"const": "Bearer"},
                "expires_in": {"const": security.ACCESS_TOKEN_LIFETIME},
                "refresh_token": {"type": "string", "pattern": f"^{security.REFRESH_TOKEN_PREFIX}"},
                "scope": {"type": "string", "description": "Space-separated granted scopes."},
            },
            closed=False,
        ),
        "Error": _object(
            {"error": {"type": "string"}, "error_description": {"type": "string"}},
            required=["error"],
        ),
    }


def document(
    base_url: str, *, default_limit: int, max_limit: int, max_known_articles: int, max_body_bytes: int
) -> dict[str, Any]:
    """The OpenAPI document for a server reached at `base_url` (no trailing slash)."""
    articles_read = [{"oauth2": ["articles:read"]}, {"bearerAuth": ["articles:read"]}]
    unauthorized = _error("The access token is missing, expired, or invalid.", "invalid_token", challenge=True)
    forbidden = _error("The token lacks the articles:read scope.", "insufficient_scope", challenge=True)
    refusals = _refusals_of_every_operation()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Blog Content Service (mkdocs-blogsvc reference implementation)",
            "version": __version__,
            "description": (
                "Published articles of the one blog an OAuth 2.0 connection was granted for. "
                "Every /api/v1 call needs `Authorization: Bearer <access token>` (the header only; "
                "query-string and form tokens are not accepted). Answers carry `Cache-Control: no-store`. "
                "A method a path does not have is answered 405 (`method_not_allowed`, with `Allow`)."
            ),
        },
        "servers": [{"url": base_url}],
        "paths": {
            "/api/v1/articles": {
                "get": {
                    "operationId": "listArticles",
                    "summary": "Published articles, newest first (ties in descending id order).",
                    "security": articles_read,
                    "parameters": [
                        {
                            "name": "page",
                            "in": "query",
                            "description": "Page number; a page past the end is empty.",
                            "schema": {"type": "integer", "minimum": 1, "default": 1},
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "description": f"Articles per page; above {max_limit} is a 400.",
                            "schema": {"type": "integer", "minimum": 1, "maximum": max_limit, "default": default_limit},
                        },
                    ],
                    "responses": {
                        "200": _ok("One page of articles.", "ArticleList"),
                        "400": _error("page or limit is not an integer in range.", "invalid_request"),
                        "401": unauthorized,
                        "403": forbidden,
                        **refusals,
                    },
                }
            },
            "/api/v1/articles/{idOrSlug}": {
                "get": {
                    "operationId": "getArticle",
                    "summary": "One published article by id, else by slug.",
                    "security": articles_read,
                    "parameters": [
                        {
                            "name": "idOrSlug",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "minLength": 1},
                        }
                    ],
                    "responses": {
                        "200": _ok("The article.", "ArticleEnvelope"),
                        "401": unauthorized,
                        "403": forbidden,
                        "404": _error("No published article of this blog has this id or slug.", "not_found"),
                        **refusals,
                    },
                }
            },
            "/api/v1/sync": {
                "post": {
                    "operationId": "sync",
                    "summary": "The differences between the client's articles and the published ones; records lastSyncAt.",
                    "security": articles_read,
                    "requestBody": {"required": True, "content": {JSON: {"schema": _ref("SyncRequest")}}},
                    "responses": {
                        "200": _ok("new, updated and deleted articles.", "SyncResponse"),
                        "400": _error(
                            "The body is not JSON, or not a SyncRequest (the description names the fault).",
                            "invalid_request",
                        ),
                        "401": unauthorized,
                        "403": forbidden,
                        "413": _error(f"The body is larger than {max_body_bytes} bytes.", "request_too_large"),
                        "415": _error("A Content-Encoding other than gzip or identity.", "unsupported_media_type"),
                        **refusals,
                    },
                }
            },
            "/api/v1/status": {
                "get": {
                    "operationId": "getStatus",
                    "summary": "The connection and its blog; any valid access token, whatever its scopes.",
                    "security": [{"oauth2": []}, {"bearerAuth": []}],
                    "responses": {"200": _ok("The connection status.", "Status"), "401": unauthorized, **refusals},
                }
            },
            "/api/oauth/token": {
                "post": {
                    "operationId": "token",
                    "summary": "Exchange an authorization code, or rotate a refresh token (the old one dies at once).",
                    "security": [{}, {"clientBasic": []}],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/x-www-form-urlencoded": {
                                "schema": {"oneOf": [_ref("AuthorizationCodeRequest"), _ref("RefreshTokenRequest")]},
                            }
                        },
                    },
                    "responses": {
                        "200": {"description": "New tokens.", "content": {JSON: {"schema": _ref("TokenResponse")}}},
                        "400": _error(
                            "RFC 6749 5.2 error.",
                            [
                                "invalid_request",
                                "invalid_client",
                                "invalid_grant",
                                "unauthorized_client",
                                "unsupported_grant_type",
                                "invalid_scope",
                            ],
                        ),
                        "401": _error("Client authentication failed.", "invalid_client"),
                        "413": _error("The body is larger than the service accepts.", "request_too_large"),
                        **refusals,
                    },
                }
            },
        },
        "components": {
            "schemas": _schemas(max_limit, max_known_articles),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": f"{security.ACCESS_TOKEN_PREFIX}...",
                },
                "oauth2": {
                    "type": "oauth2",
                    "flows": {
                        "authorizationCode": {
                            "authorizationUrl": f"{base_url}/api/oauth/authorize",
                            "tokenUrl": f"{base_url}/api/oauth/token",
                            "refreshUrl": f"{base_url}/api/oauth/token",
                            "scopes": dict(security.SCOPES),
                        }
                    },
                },
                "clientBasic": {
                    "type": "http",
                    "scheme": "basic",
                    "description": "client_id and client_secret (RFC 6749 2.3.1).",
                },
            },
        },
    }
