"""`contracts.yml`: project-wide defaults applied to every contract below it, and tool settings.

Per-contract values always win. Column rules are matched by a regular expression searched in the column
name (anchor it with ^…$ to match whole names) and fill only the fields a column leaves unset.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, StrictBool, field_validator

from delta_contracts.contract.environments import Environment, NameMapping
from delta_contracts.contract.model import (
    Checks,
    Duration,
    Evolution,
    Frozen,
    Owner,
    Scalar,
    _check_duration,
)
from delta_contracts.contract.unity import UnityCatalogSettings
from delta_contracts.tableid import TableId
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
    ledger: str | None = None  # a catalog table for the apply ledger on spark/connect
    # Spark settings for the session the `spark` engine starts (Hive metastore, Unity Catalog, …): they win
    # over the toolkit's own and over spark-defaults.conf; `--conf k=v` wins over them.
    spark_conf: dict[str, str] = Field(default_factory=dict)
    unity_catalog: UnityCatalogSettings | None = None

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _spark_conf_values_are_text(cls, value: Any) -> Any:
        """YAML reads `true` or `2` as a bool or a number; Spark settings are text, written as Spark spells
        them (`true`, not `True`)."""
        if not isinstance(value, dict):
            return value
        out = {}
        for key, item in value.items():
            if isinstance(item, dict | list) or item is None:
                raise ValueError(
                    f"spark_conf.{key}: a Spark setting is one value (text, number or true/false)"
                )
            out[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
        return out

    @field_validator("ledger")
    @classmethod
    def _ledger_is_a_table_name(cls, value: str | None) -> str | None:
        if value is not None:
            table_name_parts(value)
        return value

    @property
    def ledger_table(self) -> TableId | None:
        return None if self.ledger is None else table_name_parts(self.ledger)


_NAME_PART = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z0-9_]+)")


def table_name_parts(name: str) -> TableId:
    """`schema.table` or `catalog.schema.table`, each part plain (letters, digits, _) or `back-quoted`."""
    parts: list[str] = []
    position = 0
    while True:
        found = _NAME_PART.match(name, position)
        if found is None:
            break
        parts.append(found.group(1).replace("``", "`") if found.group(1) is not None else found.group(2))
        position = found.end()
        if position == len(name) or name[position] != ".":
            break
        position += 1
    if position != len(name) or not 2 <= len(parts) <= 3:
        raise ValueError(
            f"'{name}' is not a table name: write schema.table or catalog.schema.table "
            "(back-quote a part that has other characters than letters, digits and _)"
        )
    return TableId(parts)


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
    # Where the same contracts and migrations are applied (dev, staging, prod), each its own engine settings
    # (those left out are `engine:`'s) and names; `promote` the order a migration must go through them.
    environments: dict[str, Environment] = Field(default_factory=dict)
    promote: tuple[str, ...] = ()

    def names_in(self, environment: str | None) -> NameMapping:
        """How contract ids become table names in `environment` (the identity for None)."""
        if environment is None:
            return NameMapping()
        return self.environments[environment].mapping(self.engine_settings(environment).name)

    def engine_settings(self, environment: str | None) -> EngineSettings:
        """The engine settings of `environment` (a declared one), or `engine:` itself for None."""
        if environment is None:
            return self.engine
        overrides = self.environments[environment].engine.model_dump(exclude_unset=True)
        return EngineSettings.model_validate({**self.engine.model_dump(), **overrides})

    def unity_catalog_oss_places(self) -> list[str]:
        """The environments (or `engine` without any) whose tables live in a Unity Catalog OSS server's
        catalogs: what they cannot run is refused at `plan` (plan/unity.py)."""
        places = list(self.environments) if self.environments else [None]
        out = []
        for place in places:
            settings = self.engine_settings(place)
            unity = settings.unity_catalog
            if settings.name != "local" and unity is not None and unity.catalogs and unity.server == "oss":
                out.append(place or "engine")
        return out


def find_project_file(start: Path) -> Path | None:
    """The nearest `contracts.yml` in `start` or one of its parents."""
    here = start if start.is_dir() else start.parent
    for folder in (here.resolve(), *here.resolve().parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None
