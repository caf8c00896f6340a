"""Change values and the stable change codes, in the style of Atlas's lint codes.

Families: DS destructive, BC backward-incompatible rename, MF column modified, AD column added, CK checks and
constraints, TB table layout, QA quality/SLA, DC documentation, LC lifecycle. Codes never change meaning.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from delta_contracts.contract.model import (
    ChangeClass,
    Column,
    Contract,
    Quality,
    TableConstraint,
    TableSpec,
)
from delta_contracts.contract.nested import FieldChange
from delta_contracts.diff.rules import RulePair

PATCH, MINOR, MAJOR = ChangeClass.PATCH, ChangeClass.MINOR, ChangeClass.MAJOR

# code: (default class under DESIGN.md's policy, title)
CODES: dict[str, tuple[ChangeClass, str]] = {
    "DC-DS101": (MAJOR, "contract deleted"),
    "DC-BC102": (MAJOR, "column renamed"),
    "DC-DS103": (MAJOR, "column removed"),
    "DC-MF104": (MAJOR, "column made NOT NULL"),
    "DC-MF105": (MAJOR, "column made nullable"),
    "DC-MF106": (MINOR, "column type widened"),
    "DC-MF107": (MAJOR, "column type changed (not a widening)"),
    "DC-MF108": (MINOR, "column default changed"),
    "DC-MF109": (MAJOR, "identity column changed"),
    "DC-MF110": (MAJOR, "generation expression changed"),
    "DC-DS111": (MAJOR, "struct field removed"),
    "DC-BC112": (MAJOR, "struct field renamed"),
    "DC-MF113": (MINOR, "struct field type widened"),
    "DC-AD201": (MINOR, "nullable column added"),
    "DC-AD202": (MINOR, "NOT NULL column with a default added"),
    "DC-AD203": (MAJOR, "NOT NULL column without a default added"),
    "DC-AD204": (MAJOR, "identity or generated column added"),
    "DC-AD205": (MINOR, "nullable struct field added"),
    "DC-CK301": (MAJOR, "check added"),
    "DC-CK302": (MINOR, "check removed"),
    "DC-CK303": (MAJOR, "check tightened"),
    "DC-CK304": (MINOR, "check loosened"),
    "DC-CK305": (MINOR, "enum values added"),
    "DC-CK306": (MAJOR, "enum values removed"),
    "DC-CK307": (MAJOR, "regex changed"),
    "DC-CK311": (MAJOR, "table constraint added"),
    "DC-CK312": (MINOR, "table constraint removed"),
    "DC-CK313": (MAJOR, "table constraint changed"),
    "DC-TB401": (MAJOR, "partitioning changed"),
    "DC-TB402": (MINOR, "clustering changed"),
    "DC-TB403": (MINOR, "table property changed"),
    # Readers keep reading the same name (the alias view), so switching strategy is not breaking.
    "DC-TB404": (MINOR, "versioning strategy changed"),
    # A versioned table is named by its major version (`<table>__v<major>`): the switch needs a major bump.
    "DC-TB405": (MAJOR, "switched to versioned tables"),
    "DC-QA501": (MINOR, "SLA tightened"),
    "DC-QA502": (MAJOR, "SLA loosened"),
    "DC-QA503": (MAJOR, "unique keys changed"),
    "DC-DC601": (PATCH, "description changed"),
    "DC-DC602": (PATCH, "owner changed"),
    "DC-DC603": (PATCH, "consumers changed"),
    "DC-DC604": (PATCH, "tags changed"),
    "DC-DC605": (PATCH, "column description changed"),
    "DC-DC606": (PATCH, "evolution settings changed"),
    "DC-LC701": (MINOR, "column marked deprecated"),
    "DC-LC702": (PATCH, "lifecycle status changed"),
    "DC-LC703": (MAJOR, "contract retired"),
    "DC-LC704": (MINOR, "struct field marked deprecated"),
}

RANK = {PATCH: 1, MINOR: 2, MAJOR: 3}

# What a change is about, as it is in one contract: a column (its checks included), a table constraint, the
# table settings, the quality block, or for the contract's own settings (description, owner, consumers, tags,
# evolution, lifecycle) the contract itself.
Subject = Column | TableConstraint | TableSpec | Quality | Contract


def _no_rules() -> tuple[RulePair, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class Change:
    code: str
    change_class: ChangeClass  # under the default policy; the verdict applies reclassifications
    message: str
    field: str  # contract path, e.g. columns[3].checks.min
    # The subject in the old and in the new contract (None: it is not in that one), so that the planner turns
    # the change into ops without pairing the contracts again. Not part of a change's identity or its JSON.
    before: Subject | None = dataclasses.field(default=None, compare=False, repr=False)
    after: Subject | None = dataclasses.field(default=None, compare=False, repr=False)
    # The CHECKs the change adds, drops or rewrites, normalised as Delta stores them. Built when the planner
    # asks (`rules()`): building one generates SQL, which `diff` itself never needs.
    touched_rules: Callable[[], tuple[RulePair, ...]] = dataclasses.field(
        default=_no_rules, compare=False, repr=False
    )
    # A table property change (DC-TB403): the property's key.
    key: str | None = dataclasses.field(default=None, compare=False, repr=False)
    # A change of a field inside a column's type (DC-AD205, DC-DS111, DC-BC112, DC-MF113, DC-LC704).
    nested: FieldChange | None = dataclasses.field(default=None, compare=False, repr=False)

    def rules(self) -> tuple[RulePair, ...]:
        return self.touched_rules()

    def property_values(self) -> tuple[str, str | None, str | None]:
        """A table property change's key, and its value in the old and the new contract (None: unset)."""
        if (
            self.key is None
            or not isinstance(self.before, TableSpec)
            or not isinstance(self.after, TableSpec)
        ):
            raise TypeError(f"{self.code} at {self.field} is not a change of a table property")
        return self.key, self.before.properties.get(self.key), self.after.properties.get(self.key)

    def columns(self) -> tuple[Column, Column]:
        """The old and the new column of a change to a column both contracts have (a retype, a rename)."""
        if not isinstance(self.before, Column) or not isinstance(self.after, Column):
            raise TypeError(f"{self.code} at {self.field} is not a change of a column in both contracts")
        return self.before, self.after

    @property
    def title(self) -> str:
        return CODES[self.code][1]

    def to_json(self) -> dict[str, str]:
        return {
            "code": self.code,
            "class": self.change_class.value,
            "title": self.title,
            "message": self.message,
            "field": self.field,
        }


def change(
    code: str,
    message: str,
    where: str,
    before: Subject | None = None,
    after: Subject | None = None,
    *,
    rules: Callable[[], tuple[RulePair, ...]] = _no_rules,
    key: str | None = None,
    nested: FieldChange | None = None,
) -> Change:
    return Change(code, CODES[code][0], message, where, before, after, rules, key, nested)
