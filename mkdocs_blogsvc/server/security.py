"""Secrets and what they grant: token shapes, lifetimes and scopes; hashing; ids.

Secrets are never stored in plain text: tokens and authorization codes as SHA-256 hex digests
(they are long random strings, so a fast hash is enough), passwords and client secrets with
scrypt (they may be guessable). Ids of blogs and articles are CUID-shaped random strings that
leak neither creation order nor the host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
import time

ACCESS_TOKEN_PREFIX = "svc_at_"
REFRESH_TOKEN_PREFIX = "svc_rt_"
ACCESS_TOKEN_LIFETIME = 3600
REFRESH_TOKEN_LIFETIME = 30 * 24 * 3600
AUTHORIZATION_CODE_LIFETIME = 600
SCOPES = {
    "articles:read": "Read your published articles (list, fetch and synchronise them)",
    "blog:read": "Read your blog's details (name, description, language)",
}


# --- tokens, codes and passwords ------------------------------------------------------------


def new_token(prefix: str) -> str:
    """`prefix` + 256 random bits, URL-safe (well above the 160 bits asked for)."""
    return prefix + secrets.token_urlsafe(32)


def token_hash(value: str) -> str:
    """How tokens and codes are stored: the SHA-256 hex digest of the UTF-8 value."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str) -> str:
    """scrypt with a 16-byte random salt, in the form `scrypt$n$r$p$salt$hash` (base64)."""
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, dklen=32, **_SCRYPT)
    encode = base64.b64encode
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${encode(salt).decode()}${encode(digest).decode()}"


def verify_password(password: str, stored: str | None) -> bool:
    """Constant-time check of a password (or client secret) against `hash_password` output."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), dklen=len(expected), n=int(n), r=int(r), p=int(p)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# --- identifiers ----------------------------------------------------------------------------

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_cuid_lock = threading.Lock()
_cuid_counter = secrets.randbelow(36**4)
_FINGERPRINT = hashlib.sha256(f"{os.getpid()}{secrets.token_hex(8)}".encode()).hexdigest()


def new_cuid() -> str:
    """A collision-resistant id in the shape of the hosted service's CUIDs: `c`, then 24
    lowercase base-36 characters (25 in all, as Prisma's `cuid()` makes them).

    Unlike a classic CUID (timestamp first), the 24 characters hash a timestamp, a counter, a
    per-process fingerprint and random bytes, as CUID2 does, so ids leak neither creation order
    nor the host. 24 base-36 characters hold about 124 bits.
    """
    global _cuid_counter
    with _cuid_lock:
        _cuid_counter = (_cuid_counter + 1) % 36**4
        counter = _cuid_counter
    material = f"{time.time_ns()}{counter}{_FINGERPRINT}{secrets.token_hex(16)}".encode()
    number = int.from_bytes(hashlib.sha3_512(material).digest(), "big")
    body = []
    for _ in range(24):
        number, digit = divmod(number, 36)
        body.append(_BASE36[digit])
    return "c" + "".join(body)
