"""`contracts.yml`: project-wide defaults applied to every contract below it, and tool settings.

Per-contract values always win. Column rules are matched by a regular expression searched in the column
name (anchor it with ^…$ to match whole names) and fill only the fields a column leaves unset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, StrictBool, field_validator

from delta_contracts.contract.model import (
    Checks,
    Duration,
    Evolution,
    Frozen,
    Owner,
    Scalar,
    _check_duration,
)
from delta_contracts.target import DEFAULT_TARGET, Target

PROJECT_FILE = "contracts.yml"


class ColumnRule(Frozen):
    match: str = Field(description="Regex searched in the column name, e.g. '_id$'.", examples=["_id$"])
    nullable: StrictBool | None = None
    description: str | None = None
    checks: Checks | None = None
    default: Scalar | None = None
    tags: tuple[str, ...] | None = None
    pii: StrictBool | None = None


class ContractDefaults(Frozen):
    owner: Owner | None = None
    evolution: Evolution | None = None
    tags: tuple[str, ...] | None = None
    table: dict[str, Any] | None = None


class EngineSettings(Frozen):
    name: str = "local"
    url: str | None = None
    warehouse: str = "./warehouse"


class TelemetrySettings(Frozen):
    # A log last collected days ago says nothing about the reads since: the drop's gate needs a fresh one.
    freshness: Duration = "P1D"

    _freshness = field_validator("freshness")(classmethod(lambda cls, v: _check_duration(v)))


class Project(Frozen):
    """The parsed `contracts.yml`; `root` is the folder holding it (not part of the file)."""

    defaults: ContractDefaults = ContractDefaults()
    column_rules: tuple[ColumnRule, ...] = ()
    target: Target = DEFAULT_TARGET
    migrations: str = "migrations"
    engine: EngineSettings = EngineSettings()
    telemetry: TelemetrySettings = TelemetrySettings()


def find_project_file(start: Path) -> Path | None:
    """The nearest `contracts.yml` in `start` or one of its parents."""
    here = start if start.is_dir() else start.parent
    for folder in (here.resolve(), *here.resolve().parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None
