"""The one atomic file write of the package (credentials, cache files, the service's key file),
and the small file helpers built on it: write-if-changed, paths kept inside a folder, hashes.

Readers see the old file or the new one, never a mix, whatever moment the writer is killed at:
the data goes to a temp file in the same folder (same file system, so the rename is atomic),
which then replaces the target with `os.replace`. A temp file is removed on any failure; one
left by a killed process is named `.<name>.<16 hex digits>.tmp`, so its owner can sweep it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

#: Windows opens files in text mode unless told otherwise; elsewhere this flag does not exist.
_O_BINARY: int = getattr(os, "O_BINARY", 0)


def temp_pattern(path: Path) -> str:
    """The glob pattern of the temp files `atomic_write` creates for `path` (for sweeping)."""
    return f".{path.name}.*.tmp"


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True, overwrite: bool = True) -> None:
    """Write `data` to `path` atomically. The folder must exist (callers choose its mode).

    `mode` is the new file's permission bits, set at creation (so a secret is never readable by
    others, not even for a moment); the umask applies, as to any created file. `durable` fsyncs
    the data before the rename and the folder after it, so the new content survives a power
    loss. `overwrite=False` never replaces an existing file (`os.link` instead of `os.replace`)
    and raises `FileExistsError`: two processes creating the same file at once agree on one.
    """
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, mode)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if overwrite:
            os.replace(temp, path)
        else:
            os.link(temp, path)
    except BaseException:
        _remove(temp)
        raise
    if not overwrite:
        _remove(temp)  # the data lives on under `path`
    if durable:
        fsync_folder(path.parent)


def write_if_changed(path: Path, data: bytes, *, durable: bool = True) -> bool:
    """Write `data` atomically unless `path` already holds it (an unchanged file keeps its
    bytes and its mtime, so MkDocs and `mkdocs serve` see no change); True when written."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, durable=durable)
    return True


def inside(root: Path, relative: str) -> Path | None:
    """`root / relative` when that stays inside `root` (no `..`, not absolute), else None.

    Every path read from a file we do not fully trust (the cache manifest, an export record)
    goes through this: a tampered file must not make us read or delete anything outside `root`.
    """
    return root / relative if safe_relative(relative) else None


def safe_relative(relative: str) -> bool:
    """Whether a relative POSIX path from a file we do not fully trust stays below the folder
    it is relative to (see `inside`): not empty, not absolute, no `..`, no `\\` or `:`."""
    return (
        bool(relative)
        and not relative.startswith("/")
        and "\\" not in relative
        and ":" not in relative
        and "\0" not in relative
        and ".." not in relative.split("/")
    )


def compact_json(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8 (no spaces, non-ASCII as it is), by msgspec's encoder:
    the cache's manifest and image table, and the text every inputs hash is taken over (at
    10,000 articles the manifest in a tenth of the time of `json`'s C encoder, the same bytes)."""
    return _ENCODER.encode(value)


_ENCODER = msgspec.json.Encoder()


def inputs_hash(*inputs: Any, text: str = "") -> str:
    """The hash of what a cached result depends on (a page's inputs, an output's): the inputs as
    one compact JSON array (a third of the time of a loop over them, three times per article
    page of every build), a NUL, then `text` (a page's HTML) as it is."""
    digest = hashlib.sha256(_ENCODER.encode(inputs) + b"\0")  # `compact_json`, without a call more
    if text:  # not joined to the rest: a page's HTML is not copied again
        digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def sha256(data: bytes | str) -> str:
    """Hex SHA-256 of bytes, or of text as UTF-8 (content-addressed cache file names)."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def fsync_folder(folder: Path) -> None:
    """Make a rename or an unlink in `folder` durable (POSIX; Windows cannot open folders)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def make_durable(paths: Iterable[Path]) -> None:
    """fsync files written with `durable=False`, then each of their folders once: many files
    made durable together before the write that names them (a sync's new articles before its
    manifest). On journalling file systems the first fsync commits the others' data too, where
    `durable=True` costs two fsyncs per file, each its own commit."""
    folders: set[Path] = set()
    for path in paths:
        # Windows flushes only a handle opened for writing; POSIX fsyncs any descriptor.
        descriptor = os.open(path, (os.O_RDWR if os.name == "nt" else os.O_RDONLY) | _O_BINARY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        folders.add(path.parent)
    for folder in folders:
        fsync_folder(folder)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
