"""Environments: one set of contracts and migrations applied to several places (dev, staging, prod), each with
its engine, warehouse (ledger, leases, readers log) and a mapping from contract ids to the names the tables
have there (`sales.orders` → `prod.sales.orders`, `dev_sales.orders`).

The mapping is one function, `NameMapping.physical`; everything that reaches a live table in an environment
(migrations' ops and gates, a contract's alias and planned table) goes through it. With no environment
chosen the mapping is the identity, so a project without `environments:` works exactly as before.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from delta_contracts.contract.errors import Location, Problem
from delta_contracts.contract.model import Frozen, check_table_id
from delta_contracts.contract.unity import UnityCatalogSettings
from delta_contracts.errors import InputError
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.contract.model import Contract

ENV_ENVIRONMENT = "DELTA_CONTRACTS_ENV"
_PLACEHOLDERS = frozenset({"catalog", "schema", "table"})
_ENV_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class EnvironmentEngine(Frozen):
    """An environment's engine settings; each one left out is the project's `engine:` value."""

    name: str | None = None
    url: str | None = None
    warehouse: str | None = None
    ledger: str | None = None
    spark_conf: dict[str, str] | None = None
    unity_catalog: UnityCatalogSettings | None = None


class Environment(Frozen):
    engine: EnvironmentEngine = EnvironmentEngine()
    catalog: str | None = Field(
        default=None,
        description="The catalog tables live in here: sales.orders -> <catalog>.sales.orders.",
        examples=["prod"],
    )
    schema_prefix: str | None = Field(
        default=None,
        description="Put before every schema here: sales.orders -> <prefix>sales.orders.",
        examples=["dev_"],
    )
    names: str | None = Field(
        default=None,
        description="A template of the physical name from {catalog}, {schema} and {table} of the contract "
        "id, ending with .{table}, e.g. '{schema}_dev.{table}' (instead of catalog and schema_prefix).",
        examples=["prod.{schema}.{table}"],
    )

    @field_validator("catalog")
    @classmethod
    def _catalog_is_a_name(cls, value: str | None) -> str | None:
        if value is not None and not _PART.match(value):
            raise ValueError(
                f"'{value}' is not a catalog name: letters, digits and _ (not starting with a digit)"
            )
        return value

    @field_validator("schema_prefix")
    @classmethod
    def _prefix_is_name_text(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z0-9_]+", value):
            raise ValueError(f"'{value}' is not a schema prefix: letters, digits and _")
        return value

    @field_validator("names")
    @classmethod
    def _names_is_a_template(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as err:
            raise ValueError(f"'{value}' is not a name template: {err}") from None
        unknown = sorted(fields - _PLACEHOLDERS)
        if unknown:
            raise ValueError(
                f"'{value}' uses {', '.join('{' + u + '}' for u in unknown)}: a name template knows "
                "{catalog}, {schema} and {table}"
            )
        if not value.endswith(".{table}"):
            # The table's own name stays: predicates and views qualify columns by it.
            raise ValueError(
                f"'{value}' does not end with .{{table}}: an environment renames catalogs and schemas, "
                "not tables (e.g. '{schema}_dev.{table}')"
            )
        return value

    def mapping(self, engine: str | None = None) -> NameMapping:
        """The mapping on `engine` (the environment's engine name): the local engine keeps one catalog per
        warehouse, so there a mapped name keeps its schema.table (the warehouse is the environment's
        catalog)."""
        return NameMapping(self.catalog, self.schema_prefix, self.names, one_catalog=engine == "local")


class MappingError(InputError, ValueError):
    """A contract id the environment's mapping turns into something that is not a table name."""


@dataclass(frozen=True, slots=True)
class NameMapping:
    """How contract ids become physical names in one environment; the default maps every id to itself."""

    catalog: str | None = None
    schema_prefix: str | None = None
    template: str | None = None
    # The local engine: one catalog per warehouse, names are schema.table (a catalog part is dropped).
    one_catalog: bool = False

    @property
    def identity(self) -> bool:
        return self.catalog is None and self.schema_prefix is None and self.template is None

    def physical(self, table: TableId) -> TableId:
        """The name `table` (a contract id, or a table a migration names) has here; MappingError when the
        mapping makes it no table name."""
        if self.identity:
            return table
        if self.template is not None:
            if "{catalog}" in self.template and table.catalog is None:
                raise MappingError(
                    f"{table} names no catalog, but the name template '{self.template}' uses one"
                )
            text = self.template.format(catalog=table.catalog or "", schema=table.schema, table=table.name)
        else:
            catalog = self.catalog or table.catalog
            schema = (self.schema_prefix or "") + table.schema
            text = str(TableId(p for p in (catalog, schema, table.name) if p))
        try:
            check_table_id(text)
        except ValueError as err:
            raise MappingError(f"{table} becomes {text}: {err}") from None
        mapped = TableId.parse(text)
        return TableId(mapped[-2:]) if self.one_catalog else mapped

    def object_name(self, name: str, tables: Iterable[TableId]) -> str:
        """A gate's object (`schema.table` or `schema.table.column`) under its table's name here."""
        for table in sorted(tables, key=len, reverse=True):
            logical = str(table)
            if name.casefold() == logical.casefold() or name.casefold().startswith(logical.casefold() + "."):
                return str(self.physical(table)) + name[len(logical) :]
        return name


def contract_in_environment(contract: Contract, names: NameMapping) -> Contract:
    """The contract as telemetry, the site and `diff --readers` see it in an environment: its id is its
    table's name there, so the objects it deprecates are named as that environment's readers log names them
    (`prod.sales.orders.note`)."""
    if names.identity:
        return contract
    return contract.model_copy(update={"id": str(names.physical(contract.table_parts))})


@dataclass(frozen=True, slots=True)
class ChosenEnvironment:
    """The environment a command runs in: its name (None: the project's one `engine:`), the engine settings
    it resolves to, and its name mapping."""

    name: str | None
    mapping: NameMapping


def environment_name(flag: str | None) -> str | None:
    """`--env`, else DELTA_CONTRACTS_ENV, else none."""
    return flag or os.environ.get(ENV_ENVIRONMENT) or None


def unknown_environment(name: str, declared: Sequence[str], where: Location) -> Problem:
    known = ", ".join(declared) if declared else "none: contracts.yml declares no environments"
    return Problem(where, "environments", f"no environment '{name}' (declared: {known})", "DC-ENV")


def check_environment_names(names: Iterable[str]) -> list[str]:
    """The environment names that are not plain words (they name folders and appear in CI)."""
    return [n for n in names if not _ENV_NAME.match(n)]


def place_of(engine: str, url: str | None, warehouse: Path) -> tuple[str, str]:
    """Where an environment's tables are: the local engine's warehouse folder, or a Spark catalog (the same
    one for every environment on one cluster or session)."""
    if engine == "local":
        return ("local", str(warehouse))
    return ("catalog", url or "")


def collision_key(place: tuple[str, str], table: TableId) -> tuple[str, str, tuple[str, ...]]:
    # The local engine keeps one catalog (schema.table): a catalog part does not tell two tables apart there.
    parts = table[-2:] if place[0] == "local" else tuple(table)
    return (place[0], place[1], tuple(p.casefold() for p in parts))
