"""An engine's per-op code as a table keyed by op class: each engine's op module (`local.ops`, `spark.ops`)
builds one, and its engine looks each op up there instead of testing the op's class."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from delta_contracts.plan.ops import Op

E = TypeVar("E")


class OpTable(Generic[E]):
    """Entries by op class. `default`: the entry of a class not listed, found after its listed bases (an op
    class that extends another runs as that one does); None: every class must be listed itself, so that a new
    op says how it runs on the engine."""

    def __init__(self, entries: Mapping[type[Op], E], default: E | None = None) -> None:
        self._entries = dict(entries)
        self.default = default

    def entry(self, op: Op | type[Op]) -> E | None:
        cls = op if isinstance(op, type) else type(op)
        if cls in self._entries:
            return self._entries[cls]
        if self.default is None:
            return None
        found = next((self._entries[base] for base in cls.__mro__ if base in self._entries), None)
        return self.default if found is None else found

    def __getitem__(self, op: Op | type[Op]) -> E:
        found = self.entry(op)
        if found is None:
            name = op.__name__ if isinstance(op, type) else type(op).__name__
            raise KeyError(f"no entry for the op class {name}")
        return found

    def items(self) -> Iterator[tuple[type[Op], E]]:
        yield from self._entries.items()
