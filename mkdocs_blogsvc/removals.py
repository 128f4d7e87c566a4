"""What the sanitiser took out of an article (`Removed`), apart from the sanitiser itself: a
build with nothing changed logs the removals kept in the cache without importing nh3, its
tables and Markdown's parsers (`sanitize`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Removed:
    """What a pass took out, by kind: `element` (tag name), `attribute` (name), `url` (scheme)."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, kind: str, name: str, number: int = 1) -> None:
        self.counts[(kind, name)] += number

    def update(self, other: Removed) -> None:
        self.counts.update(other.counts)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def to_json(self) -> list[list[Any]]:
        return [[kind, name, number] for (kind, name), number in sorted(self.counts.items())]

    @classmethod
    def from_json(cls, data: Any) -> Removed:
        """What `to_json` wrote; anything else is nothing removed (it is only logged)."""
        removed = cls()
        for item in data if isinstance(data, list) else ():
            if isinstance(item, list) and len(item) == 3 and isinstance(item[2], int):
                removed.add(str(item[0]), str(item[1]), item[2])
        return removed

    def summary(self) -> str:
        """`2 <script> elements, 1 onerror attribute, 1 javascript: URL` (most frequent first)."""
        parts = []
        order = {"element": 0, "attribute": 1, "url": 2}
        ranked = sorted(self.counts.items(), key=lambda item: (-item[1], order.get(item[0][0], 3), item[0][1]))
        for (kind, name), number in ranked:
            plural = "" if number == 1 else "s"
            if kind == "element":
                parts.append(f"{number} <{name}> element{plural}")
            elif kind == "url":
                parts.append(f"{number} {name}: URL{plural}")
            else:
                parts.append(f"{number} {name} attribute{plural}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Cleaned:
    text: str
    removed: Removed
