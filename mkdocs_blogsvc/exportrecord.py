"""The record of what `mkdocs-blogsvc export` owns in its folder: `DEST/.blogsvc-export.json`,
one list of docs-relative paths per blog (by blog_dir). `export` keeps it; the plugin reads it
at every build to leave those files out (its own pages replace them), so it lives apart from
`export` and what that module imports: a build with nothing changed loads neither.
"""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs_blogsvc.fileio import write_if_changed

EXPORT_RECORD = ".blogsvc-export.json"


def load_record(dest: Path) -> dict[str, list[str]]:
    """blog_dir of each exported instance -> the paths its export wrote (a site may export
    several blogs into one folder: each export replaces only its own list). A record of the
    first format, a plain list, is returned under the key ""."""
    try:
        data = json.loads((dest / EXPORT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if isinstance(data, list):
        return {"": [p for p in data if isinstance(p, str)]}
    instances = data.get("instances") if isinstance(data, dict) else None
    if not isinstance(instances, dict):
        return {}
    return {
        str(key): [p for p in value if isinstance(p, str)]
        for key, value in instances.items()
        if isinstance(value, list)
    }


def read_record(dest: Path, instance: str | None = None) -> set[str]:
    """The docs-relative paths earlier exports wrote into `dest`: those of the instance whose
    blog_dir is `instance` (with a first-format record's), or of every instance (None)."""
    record = load_record(dest)
    keys = record.keys() if instance is None else {instance, ""}
    return {path for key in keys for path in record.get(key, [])}


def write_record(dest: Path, instance: str, paths: set[str]) -> None:
    """Replace the list of the instance whose blog_dir is `instance` with `paths`."""
    record = load_record(dest)
    record.pop("", None)  # a first-format list belonged to this export (one instance then)
    record[instance] = sorted(paths)
    _save_record(dest, record)


def drop_from_record(dest: Path, instance: str) -> None:
    """Forget the instance whose blog_dir is `instance` (its files were removed)."""
    record = load_record(dest)
    record.pop(instance, None)
    _save_record(dest, record)


def _save_record(dest: Path, record: dict[str, list[str]]) -> None:
    data = {"version": 1, "instances": dict(sorted(record.items()))}
    write_if_changed(dest / EXPORT_RECORD, (json.dumps(data, indent=1) + "\n").encode("utf-8"))
