"""Which column of the old contract became which column of the new one.

Matching is case-insensitive, as Delta's is. A column is renamed only when `renamed_from` says so and the
old name is gone from the new contract: a drop plus an add that merely look alike are not a rename.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta_contracts.contract.model import Column, Contract


@dataclass(frozen=True, slots=True)
class ColumnPairing:
    kept: tuple[tuple[Column, Column], ...]  # same name in both
    renamed: tuple[tuple[Column, Column], ...]  # (old, new) through renamed_from
    added: tuple[Column, ...]
    removed: tuple[Column, ...]

    @property
    def matched(self) -> tuple[tuple[Column, Column], ...]:
        return self.kept + self.renamed


def pair_columns(old: Contract, new: Contract) -> ColumnPairing:
    old_by_name = {c.name.casefold(): c for c in old.columns}
    new_names = {c.name.casefold() for c in new.columns}
    kept: list[tuple[Column, Column]] = []
    renamed: list[tuple[Column, Column]] = []
    added: list[Column] = []
    used: set[str] = set()
    for column in new.columns:
        folded = column.name.casefold()
        if folded in old_by_name:
            kept.append((old_by_name[folded], column))
            used.add(folded)
            continue
        source = column.renamed_from.casefold() if column.renamed_from else None
        if source and source in old_by_name and source not in new_names and source not in used:
            renamed.append((old_by_name[source], column))
            used.add(source)
        else:
            added.append(column)
    removed = tuple(c for c in old.columns if c.name.casefold() not in used)
    return ColumnPairing(tuple(kept), tuple(renamed), tuple(added), removed)
