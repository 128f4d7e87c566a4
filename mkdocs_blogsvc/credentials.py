"""The credential store and the token manager: refresh-token rotation without losing a token.

The service rotates the refresh token on every refresh and revokes the whole grant when a
rotated token is presented again. So:
- the stored access token is reused while it has more than a minute to live (no refresh at all);
- a refresh happens under a cross-process file lock, after re-reading the store (another build
  may have refreshed while we waited), and the new pair is on disk (atomically, fsynced) before
  the new access token is used for anything;
- the store is written atomically: a kill at any moment leaves the old file or the new one.

On-disk format (version 1), a JSON object with mode 0600 in a 0700 folder::

    {"version": 1, "base_url": ..., "client_id": ..., "access_token": ..., "access_expires_at": ISO,
     "refresh_token": ..., "refresh_expires_at": ISO, "scope": "a b", "saved_at": ISO}
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import filelock

from mkdocs_blogsvc import config, errors, fileio, models, redaction
from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.logs import log

FORMAT_VERSION = 1
#: An access token with less than this left is refreshed before use.
ACCESS_TOKEN_MARGIN = 60.0
#: How long a build waits for another process's refresh before giving up.
LOCK_TIMEOUT = 120.0
#: Temp files older than this were left by a killed process and are removed on the next save.
STALE_TEMP_AGE = 600.0


def refused(what: str, description: str = "", *, before: str = "") -> str:
    """The message for a refresh token the service refused (`invalid_grant`): `what` names the
    token ("the refresh token in PATH"), `description` is the service's reason, `before` what
    happened to a token tried first (`expired`)."""
    said = f" ({description})" if description else ""
    return f"{before}the service refused {what}{said}: it was rotated, revoked or has expired. {_LOG_IN_AGAIN}"


def expired(what: str, when: float) -> str:
    """The message for a refresh token expired by this machine's clock: never sent, so no
    service refused it."""
    return f"{what} {_expired_on(when)}. {_LOG_IN_AGAIN}"


def _expired_on(when: float) -> str:
    return f"expired on {_iso(when)} (it was not sent to the service)"


_LOG_IN_AGAIN = (
    f"Run `mkdocs-blogsvc login` again; in CI, then put the output of `mkdocs-blogsvc token --print-refresh-token` "
    f"in the {config.ENV_REFRESH_TOKEN} secret: a build whose stored credentials are refused starts again from it "
    "(see the CI recipe page of the docs)"
)


@dataclass(frozen=True)
class StoredCredentials:
    """What the store holds: one token pair, bound to the service and client it came from.

    Expiry times are POSIX timestamps (seconds). `repr()` never shows a token.
    """

    base_url: str
    client_id: str
    access_token: str = field(repr=False)
    access_expires_at: float
    refresh_token: str = field(repr=False)
    refresh_expires_at: float
    scope: tuple[str, ...] = ()
    saved_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        redaction.hold(self.access_token, self.refresh_token)  # masked in every message from now on

    @classmethod
    def from_token_set(
        cls,
        tokens: models.TokenSet,
        *,
        base_url: str,
        client_id: str,
        previous_scope: tuple[str, ...] = (),
        now: float | None = None,
    ) -> StoredCredentials:
        return cls(
            base_url=base_url,
            client_id=client_id,
            access_token=tokens.access_token,
            access_expires_at=tokens.access_expires_at,
            refresh_token=tokens.refresh_token,
            refresh_expires_at=tokens.refresh_expires_at,
            scope=tokens.scope or previous_scope,
            saved_at=time.time() if now is None else now,
        )

    def access_valid_for(self, now: float) -> float:
        """Seconds the access token has left (negative once expired)."""
        return self.access_expires_at - now

    def to_json(self) -> dict[str, Any]:
        return {
            "version": FORMAT_VERSION,
            "base_url": self.base_url,
            "client_id": self.client_id,
            "access_token": self.access_token,
            "access_expires_at": _iso(self.access_expires_at),
            "refresh_token": self.refresh_token,
            "refresh_expires_at": _iso(self.refresh_expires_at),
            "scope": " ".join(self.scope),
            "saved_at": _iso(self.saved_at),
        }

    @classmethod
    def from_json(cls, data: Any) -> StoredCredentials:
        """Parse the file's object; `ValueError` naming the problem (never a value)."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unknown format version {str(data.get('version'))[:20]!r}")
        text = {}
        for key in (
            "base_url",
            "client_id",
            "access_token",
            "refresh_token",
            "scope",
            "access_expires_at",
            "refresh_expires_at",
            "saved_at",
        ):
            if not isinstance(data.get(key), str):
                raise ValueError(f"field {key!r} is missing or not a string")
            text[key] = data[key]
        if text["access_token"] and not models.ACCESS_TOKEN_SYNTAX.fullmatch(text["access_token"]):
            raise ValueError("field 'access_token' holds characters a bearer token cannot have")
        if not models.REFRESH_TOKEN_SYNTAX.fullmatch(text["refresh_token"]):
            raise ValueError("field 'refresh_token' holds characters a token cannot have")
        try:
            return cls(
                base_url=text["base_url"],
                client_id=text["client_id"],
                access_token=text["access_token"],
                access_expires_at=_timestamp(text["access_expires_at"]),
                refresh_token=text["refresh_token"],
                refresh_expires_at=_timestamp(text["refresh_expires_at"]),
                scope=tuple(text["scope"].split()),
                saved_at=_timestamp(text["saved_at"]),
            )
        except errors.InvalidResponse as exc:
            raise ValueError(f"a timestamp is {exc}") from None


def _iso(moment: float) -> str:
    return models.format_timestamp(datetime.fromtimestamp(moment, timezone.utc))


def _timestamp(text: str) -> float:
    return models.parse_timestamp(text).timestamp()


class CredentialStore:
    """The credentials file: atomic writes, mode 0600, and the lock file beside it.

    Every OS failure (a read-only or missing folder, a path through a file, a full disk) is a
    `CredentialsError` naming the path, the reason and what to do, never a raw `OSError`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def __repr__(self) -> str:
        return f"CredentialStore({str(self.path)!r})"

    def load(self) -> StoredCredentials | None:
        """The stored credentials, or None when there is no store."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise self._corrupt("not UTF-8 text") from None
        except OSError as exc:
            raise self._os_error("read", self.path, exc) from None
        try:
            return StoredCredentials.from_json(json.loads(text))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            reason = "not valid JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise self._corrupt(reason) from None

    def save(self, credentials: StoredCredentials) -> None:
        """Replace the store atomically (temp file created 0600, fsync, rename, fsync of the
        folder): a crash leaves either the old file or the new one, never a mix."""
        folder = self._ensure_folder()
        payload = json.dumps(credentials.to_json(), indent=2).encode("utf-8") + b"\n"
        try:
            fileio.atomic_write(self.path, payload, mode=0o600)
        except OSError as exc:
            raise self._os_error("write", self.path, exc) from None
        self._remove_stale_temp_files(folder)

    def delete(self) -> bool:
        """Remove the store; True if one existed. The lock file stays: another process may be
        waiting on it, and it holds nothing."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise self._os_error("delete", self.path, exc) from None
        fileio.fsync_folder(self.path.parent)
        return True

    @contextlib.contextmanager
    def locked(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """The exclusive cross-process lock held while a refresh rotates the tokens."""
        self._ensure_folder()
        lock = filelock.FileLock(str(self.lock_path), timeout=timeout, mode=0o600)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise errors.CredentialsError(
                f"another mkdocs-blogsvc process has held {self.lock_path} for over {timeout:.0f} s; "
                "if none is running, delete that file"
            ) from None
        except OSError as exc:
            raise self._os_error("lock", self.lock_path, exc) from None
        try:
            yield
        finally:
            lock.release()

    def _ensure_folder(self) -> Path:
        folder = self.path.parent
        try:
            if not folder.is_dir():
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise self._os_error("create the folder", folder, exc) from None
        return folder

    def _remove_stale_temp_files(self, folder: Path) -> None:
        """Temp files of killed processes hold (dead) tokens: remove them once surely abandoned."""
        limit = time.time() - STALE_TEMP_AGE
        for leftover in folder.glob(fileio.temp_pattern(self.path)):
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < limit:
                    leftover.unlink()

    def _corrupt(self, reason: str) -> errors.CredentialsCorrupt:
        return errors.CredentialsCorrupt(
            f"the credentials file {self.path} cannot be read ({reason}): run `mkdocs-blogsvc login`"
        )

    def _os_error(self, action: str, target: Path, exc: OSError) -> errors.CredentialsError:
        return errors.CredentialsError(folder_problem(action, target, self.path.parent, exc))


def folder_problem(action: str, target: Path, folder: Path, exc: OSError) -> str:
    """The one line for an OS error on the credentials folder: what failed, on which path, and
    the fix for its cause (`errors.storage_fix`)."""
    reason = exc.strerror or type(exc).__name__
    return (
        f"cannot {action} {target} ({reason}): the credentials folder {folder} must be a folder this user "
        f"can read and write; {errors.storage_fix(exc, 'credentials_file')}"
    )


class TokenManager:
    """Access tokens for data calls (`api.TokenSource`), with rotation-safe refreshes.

    Never refreshes while the stored access token has more than a minute left; refreshes under
    the store's lock after re-reading it, and saves before returning the new token.
    """

    def __init__(
        self,
        settings: config.Settings,
        client: BlogServiceClient,
        *,
        clock: Callable[[], float] = time.time,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.settings = settings
        self.client = client
        self.store = CredentialStore(settings.credentials_file)
        self._clock = clock
        self._environ = environ

    def __repr__(self) -> str:
        return f"TokenManager({self.settings.base_url!r}, {str(self.store.path)!r})"

    # --- api.TokenSource -------------------------------------------------------------------

    def access_token(self) -> str:
        stored = self._load()
        if stored is not None and self._usable(stored):
            return stored.access_token
        with self.store.locked():
            stored = self._load()  # another process may have refreshed while we waited
            if stored is None:
                return self._seed_from_environment().access_token
            if self._usable(stored):
                return stored.access_token
            return self._refresh_stored(stored).access_token

    def refresh_rejected(self, rejected: str) -> str:
        with self.store.locked():
            stored = self._load()
            if stored is None:
                return self._seed_from_environment().access_token
            if stored.access_token != rejected and self._usable(stored):
                return stored.access_token  # another process refreshed already
            log.debug("the service rejected the access token; refreshing")
            return self._refresh_stored(stored).access_token

    # --- for the plugin and the CLI --------------------------------------------------------

    def stored(self) -> StoredCredentials | None:
        """The store's content, checked to belong to this service and client (no network)."""
        return self._load()

    def refresh_expires_soon(self, days: float = 7) -> datetime | None:
        """When the refresh token expires, if that is within `days`; else None (or no store)."""
        stored = self._load()
        if stored is None or stored.refresh_expires_at - self._clock() > days * 86400:
            return None
        return datetime.fromtimestamp(stored.refresh_expires_at, timezone.utc)

    def force_refresh(self) -> StoredCredentials:
        """Refresh now, whatever the access token's state."""
        with self.store.locked():
            return self._force_refresh()

    def hand_over(self) -> StoredCredentials:
        """Refresh, then forget the new pair here (`token --print-refresh-token`): a refresh
        token must live in one place only, or the first holder to refresh kills the other's."""
        with self.store.locked():
            fresh = self._force_refresh()
            self.store.delete()
            return fresh

    def _force_refresh(self) -> StoredCredentials:
        stored = self._load()
        if stored is None:
            return self._seed_from_environment()
        return self._refresh_stored(stored)

    # --- internals -------------------------------------------------------------------------

    def _load(self) -> StoredCredentials | None:
        stored = self.store.load()
        if stored is None:
            return None
        client_id = self.settings.require_client_id()
        if (stored.base_url, stored.client_id) != (self.settings.base_url, client_id):
            raise errors.CredentialsError(_mismatch(self.store.path, stored, self.settings.base_url, client_id))
        return stored

    def _usable(self, stored: StoredCredentials) -> bool:
        return stored.access_valid_for(self._clock()) > ACCESS_TOKEN_MARGIN

    def _seed_from_environment(
        self, what: str = f"the refresh token in {config.ENV_REFRESH_TOKEN}", *, before: str = ""
    ) -> StoredCredentials:
        """No store (or a refused one): a CI run may bring a refresh token in BLOGSVC_REFRESH_TOKEN
        (spent at once); `what` names it when the service refuses it, after `before`."""
        refresh_token = self._environ.get(config.ENV_REFRESH_TOKEN, "").strip()
        if not refresh_token:
            self.settings.require_client_id()  # the first thing to fix when both are missing
            raise errors.NotLoggedIn(
                f"not logged in: no credentials at {self.store.path} and {config.ENV_REFRESH_TOKEN} "
                "is not set; run `mkdocs-blogsvc login`"
            )
        log.info("seeding %s from %s", self.store.path, config.ENV_REFRESH_TOKEN)
        seed = StoredCredentials(
            base_url=self.settings.base_url,
            client_id=self.settings.require_client_id(),
            access_token="",
            access_expires_at=0.0,
            refresh_token=refresh_token,
            refresh_expires_at=self._clock() + models.TokenSet.REFRESH_LIFETIME,
            scope=tuple(self.settings.scope.split()),
        )
        return self._refresh(seed, what=what, before=before, source=config.ENV_REFRESH_TOKEN)

    def _refresh_stored(self, stored: StoredCredentials) -> StoredCredentials:
        """Refresh with the store's token; when the service refuses it and BLOGSVC_REFRESH_TOKEN
        holds another token, start again from that one.

        In CI the store restored from a cache takes precedence over the secret, so without this a
        dead store (a run killed before it saved, an older cache restored, two runs at once) would
        shadow the new token the owner put in the secret, run after run. Trying the secret then
        costs nothing: the refused token's connection is dead already.
        """
        what = f"the refresh token in {self.store.path}"
        try:
            return self._refresh(stored, what=what)
        except errors.ReauthorizationRequired as exc:
            secret = self._environ.get(config.ENV_REFRESH_TOKEN, "").strip()
            if not secret or secret == stored.refresh_token:
                raise
            sent, reason = exc.sent, exc.reason
        if not sent:  # expired by this machine's clock: no service refused it
            first = f"{what} {_expired_on(stored.refresh_expires_at)}"
            log.info("%s; starting again from %s", first, config.ENV_REFRESH_TOKEN)
            return self._seed_from_environment(what=f"the one in {config.ENV_REFRESH_TOKEN}", before=f"{first}, and ")
        what += f" ({reason})" if reason else ""
        log.info("the service refused %s; starting again from %s", what, config.ENV_REFRESH_TOKEN)
        return self._seed_from_environment(what=f"{what}, then the one in {config.ENV_REFRESH_TOKEN}")

    def _refresh(
        self, stored: StoredCredentials, *, what: str, before: str = "", source: str | None = None
    ) -> StoredCredentials:
        """Spend the refresh token (caller holds the lock) and persist the new pair first;
        `what` names the token in the message when the service refuses it (after `before`),
        `source` where it was read (the store's path unless said)."""
        now = self._clock()
        if stored.refresh_expires_at <= now:
            raise errors.ReauthorizationRequired(expired(what, stored.refresh_expires_at), sent=False)
        form = {"grant_type": "refresh_token", "refresh_token": stored.refresh_token, "client_id": stored.client_id}
        if self.settings.client_secret:
            form["client_secret"] = self.settings.client_secret
        try:
            tokens = self.client.token_request(form, now=now, previous_refresh_token=stored.refresh_token)
        except errors.InvalidGrant as exc:
            # remote text, repeated in CI logs: the refresh token and the client secret sent back
            # are masked whatever their shape (both are held: see `redaction`)
            reason = redaction.redact(exc.description)
            raise errors.ReauthorizationRequired(refused(what, reason, before=before), reason=reason) from None
        except errors.AnswerLost as exc:
            raise errors.AnswerLost(
                f"{exc}. If the service rotated the refresh token before the answer was lost, the one in "
                f"{source or self.store.path} is spent: the next sync finds out, and then `mkdocs-blogsvc login` "
                "is needed"
            ) from None
        except errors.UnusableTokenResponse as exc:
            if exc.refresh_token is None or exc.refresh_token == stored.refresh_token:
                raise
            # the refresh token sent is spent: keep the new one, with no access token, and say so
            self._save_rotated(
                replace(
                    stored,
                    access_token="",
                    access_expires_at=now,
                    refresh_token=exc.refresh_token,
                    refresh_expires_at=now + models.TokenSet.REFRESH_LIFETIME,
                    saved_at=now,
                )
            )
            raise errors.InvalidResponse(
                f"{exc}; the new refresh token it carried is saved, so the next sync tries again"
            ) from None
        fresh = StoredCredentials.from_token_set(
            tokens, base_url=stored.base_url, client_id=stored.client_id, previous_scope=stored.scope, now=now
        )
        self._save_rotated(fresh)
        log.debug("tokens refreshed and saved to %s", self.store.path)
        return fresh

    def _save_rotated(self, fresh: StoredCredentials) -> None:
        try:
            self.store.save(fresh)
        except errors.CredentialsError as exc:
            raise errors.CredentialsError(
                f"the tokens were rotated but not saved, so the previous refresh token is now dead: {exc}; "
                "then run `mkdocs-blogsvc login`"
            ) from None


def _mismatch(path: Path, stored: StoredCredentials, base_url: str, client_id: str) -> str:
    """Why the stored credentials are not used, naming only what changed and both ways out:
    the setting may be the mistake (a typo in mkdocs.yml), or the service or the client may
    really have changed (then a new login)."""
    where = f"the credentials in {path}"
    if stored.client_id == client_id:
        return (
            f"{where} were issued by the service at {stored.base_url}, but `base_url` is now {base_url} "
            f"(credentials are never sent to another address): if that change is a mistake, set `base_url` "
            f"in mkdocs.yml back to {stored.base_url}; if the service moved, run `mkdocs-blogsvc login`"
        )
    if stored.base_url == base_url:
        return (
            f"{where} were issued to client_id {stored.client_id!r}, but `client_id` is now {client_id!r} "
            "(mkdocs.yml or BLOGSVC_CLIENT_ID): if that change is a mistake, set it back to "
            f"{stored.client_id!r}; if the site was registered again, run `mkdocs-blogsvc login`"
        )
    return (
        f"{where} were issued to client_id {stored.client_id!r} by the service at {stored.base_url}, but the "
        f"settings now say client_id {client_id!r} at {base_url}: if that change is a mistake, set `base_url` "
        "and `client_id` in mkdocs.yml back; otherwise run `mkdocs-blogsvc login`"
    )
