"""The `delta-contracts/v1` contract model: immutable pydantic values, unknown keys refused.

Structure only. Meaning (types that exist, min <= max, regexes that compile, …) is checked by `lint`, so
that one run can report every problem with its location instead of stopping at the first.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

from delta_contracts.tableid import TableId

API_VERSION = "delta-contracts/v1"

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
_DURATION = re.compile(
    r"^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)
# A table id is what a user types in Spark SQL without quotes: two or three parts of letters, digits and `_`,
# none starting with a digit (Spark's parser reads `t.1d`, `t.12L` or `t.1e5` as numbers). Unquoted Spark
# identifiers are ASCII (`t.名前` does not parse), and the id names a folder of the migrations directory and
# of the local warehouse, so a path separator can never be part of one.
_ID_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_TABLE_ID = re.compile(rf"^{_ID_PART}(\.{_ID_PART}){{1,2}}$")
# Ids name folders and files (`migrations/<id>/`, the local engine's backups `<id>.v<n>.<time>.<token>`):
# these bounds keep every such name under the 255 bytes a file name may have.
MAX_ID_LENGTH = 160
MAX_VERSION_LENGTH = 64


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


def _check_semver(value: str) -> str:
    if not isinstance(value, str) or not _SEMVER.match(value):
        raise ValueError(f"'{value}' is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.4.0)")
    if len(value) > MAX_VERSION_LENGTH:
        raise ValueError(f"version is {len(value)} characters long: at most {MAX_VERSION_LENGTH}")
    return value


def printable(text: str) -> str:
    """`text` for a one-line message: characters that do not print (line breaks, tabs, …) as escapes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def check_table_id(value: str) -> str:
    """`value` when it is a table id (module comment above); ValueError saying why not otherwise."""
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(
            f"table id is {len(value)} characters long: at most {MAX_ID_LENGTH} "
            "(it names the table's migrations folder)"
        )
    if not _TABLE_ID.match(value):
        shown = printable(value)
        raise ValueError(
            f"'{shown}' is not a table id: use schema.table or catalog.schema.table, each part letters, "
            "digits and _ (not starting with a digit)"
        )
    return value


def duration_seconds(text: str) -> float:
    """An ISO-8601 duration in seconds (a month counts 30 days, a year 365); 0 for text that is none."""
    match = _DURATION.match(text)
    if not match:
        return 0.0
    y, mo, w, d, h, mi, s = (float(g) if g else 0.0 for g in match.groups())
    return (((y * 365 + mo * 30 + w * 7 + d) * 24 + h) * 60 + mi) * 60 + s


def _check_duration(value: str) -> str:
    if not _DURATION.match(value):
        raise ValueError(f"'{value}' is not an ISO-8601 duration (e.g. P30D, PT30M, P1DT12H)")
    return value


def duration(value: str) -> timedelta:
    """An ISO-8601 duration as a timedelta (a year counts 365 days, a month 30)."""
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"'{value}' is not an ISO-8601 duration (e.g. P30D, PT30M, P1DT12H)")
    y, mo, w, d, h, mi, s = (float(g) if g else 0.0 for g in match.groups())
    return timedelta(days=y * 365 + mo * 30 + w * 7 + d, hours=h, minutes=mi, seconds=s)


SemVer = Annotated[str, Field(description="Semantic version MAJOR.MINOR.PATCH", examples=["3.0.0"])]
Duration = Annotated[str, Field(description="ISO-8601 duration", examples=["P30D", "PT30M"])]
Scalar = str | int | float | bool
# A min/max bound as YAML gives it: a number, a date, a timestamp, or text. Kept as written (no coercion:
# `"5"` stays text) so that `lint` can say which bound does not fit its column's type.
Bound = StrictInt | StrictFloat | datetime | date | StrictStr


class Owner(Frozen):
    team: str
    email: str | None = None


class Consumer(Frozen):
    name: str
    contact: str | None = None
    description: str | None = None


class Versioning(StrEnum):
    IN_PLACE = "in_place"
    VERSIONED = "versioned"


class TableSpec(Frozen):
    partitioned_by: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()
    properties: dict[str, str] = Field(
        default_factory=dict, examples=[{"delta.enableChangeDataFeed": "true"}]
    )
    versioning: Versioning = Versioning.IN_PLACE
    comment: str | None = None

    @field_validator("properties", mode="before")
    @classmethod
    def _properties_are_strings(cls, value: Any) -> Any:
        # Delta stores every property as a string; YAML `true` or `5` would otherwise be refused.
        if isinstance(value, dict):
            return {k: _property_text(v) for k, v in value.items()}
        return value


def _property_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


class Checks(Frozen):
    min: Bound | None = None
    max: Bound | None = None
    enum: tuple[Scalar, ...] | None = None
    regex: str | None = None

    @field_validator("min", "max", mode="before")
    @classmethod
    def _iso_text_is_a_date(cls, value: Any) -> Any:
        # A quoted "2024-01-01" (and a bound read back from a stored migration's JSON) is the date it names.
        if isinstance(value, str):
            for parse in (date.fromisoformat, datetime.fromisoformat):
                try:
                    return parse(value)
                except ValueError:
                    continue
        return value


class Deprecation(Frozen):
    since: SemVer
    replaced_by: str | None = None
    reason: str | None = None

    @field_validator("since", mode="before")
    @classmethod
    def _since(cls, value: Any) -> Any:
        return _check_semver(str(value) if isinstance(value, int | float) else value)


class Conversion(Frozen):
    """How a value changes type where no Delta type widening can (the copy into a new versioned table)."""

    expression: str = Field(
        min_length=1,
        description="Spark SQL over the previous version's columns giving this column's value, "
        "e.g. CAST(amount * 100 AS BIGINT).",
        examples=["CAST(txn_amt * 100 AS BIGINT)"],
    )
    inverse: str | None = Field(
        default=None,
        description="Spark SQL over this version's columns giving the previous value back, for the "
        "compatibility view in the old shape; without it the old version gets no compatibility view. It must "
        "give back every original value exactly: the copy refuses a row whose value it does not (15.411 "
        "stored as 15.41 reads back as 15.41), unless the conversion is declared `lossy`.",
        examples=["CAST(txn_amt_paise AS DECIMAL(14,2)) / 100"],
    )
    lossy: StrictBool = Field(
        default=False,
        description="`true` accepts that the conversion changes values (rounding 15.411 to 15.41): the copy "
        "proceeds, counts the rows whose value the conversion changes (those the `inverse`, or without one "
        "a CAST back to the previous type, does not give back) and reports that count in `apply`'s output "
        "and in the ledger; the compatibility view shows the changed values. A value the conversion turns "
        "NULL (overflow, no such value) is refused either way.",
        examples=[True],
    )


class IdentityGeneration(StrEnum):
    ALWAYS = "always"
    BY_DEFAULT = "by_default"


class Identity(Frozen):
    """A Delta identity column: Delta assigns each new row the next value (`delta.identity.*` metadata)."""

    generated: IdentityGeneration = Field(
        default=IdentityGeneration.ALWAYS,
        description="`always` (GENERATED ALWAYS: writers may not give a value) or `by_default` (GENERATED BY "
        "DEFAULT: a writer's value is kept, a missing one is assigned).",
        examples=["by_default"],
    )
    start: StrictInt = Field(default=1, description="The first value assigned.", examples=[1000])
    step: StrictInt = Field(
        default=1, description="The difference between two assigned values (not 0).", examples=[1]
    )


class Column(Frozen):
    name: str = Field(min_length=1, examples=["txn_amt_paise"])
    type: str
    nullable: StrictBool = True  # `nullable: "no"` is an error, not NOT NULL
    description: str | None = None
    checks: Checks = Checks()
    default: Scalar | None = None
    default_expression: str | None = Field(
        default=None,
        description="Column default as a Spark SQL expression (`current_timestamp()`, `current_date()`), "
        "instead of a literal `default`.",
        examples=["current_timestamp()"],
    )
    identity: Identity | None = Field(
        default=None,
        description="An identity column (`bigint`): `GENERATED ALWAYS|BY DEFAULT AS IDENTITY`.",
        examples=[{"generated": "always", "start": 1, "step": 1}],
    )
    generated: str | None = Field(
        default=None,
        description="A generated column: the Spark SQL expression over the table's other columns Delta "
        "computes it from (`GENERATED ALWAYS AS (…)`); writers never give its value.",
        examples=["CAST(event_ts AS DATE)"],
    )
    renamed_from: str | None = None
    fill: str | None = Field(
        default=None,
        description="Spark SQL over the table's other columns filling existing rows of a NOT NULL column "
        "added without a default (in-place backfill and versioned copy).",
        examples=["coalesce(legacy_channel, 'card')"],
    )
    convert: Conversion | None = Field(
        default=None,
        description="Explicit conversion for a type change that is not a Delta type widening.",
        examples=[{"expression": "CAST(txn_amt * 100 AS BIGINT)"}],
    )
    deprecated: Deprecation | None = None
    renamed_fields: dict[str, str] = Field(
        default_factory=dict,
        description="Fields inside the column's type renamed by this version: the field's path in the "
        "previous version (`zip`; into an array `element.sku`, into a map's values `value.f`) to its new "
        "name, as Delta's `RENAME COLUMN addr.zip TO postal_code` takes them.",
        examples=[{"zip": "postal_code"}],
    )
    deprecated_fields: dict[str, Deprecation] = Field(
        default_factory=dict,
        description="Fields inside the column's type on their way out, by path (`zip`, `element.sku`, "
        "`value.f`): a later version may remove them once the deprecation window has passed.",
        examples=[{"zip": {"since": "2.4.0", "replaced_by": "postal_code"}}],
    )
    tags: tuple[str, ...] = ()
    pii: StrictBool = False


class TableConstraint(Frozen):
    name: str = Field(min_length=1, examples=["refund_has_parent"])
    expression: str = Field(min_length=1, examples=["status <> 'REFUNDED' OR parent_id IS NOT NULL"])


class Freshness(Frozen):
    column: str
    max_age: Duration

    _max_age = field_validator("max_age")(classmethod(lambda cls, v: _check_duration(v)))


class Volume(Frozen):
    min_rows: int | None = Field(default=None, ge=0, examples=[10000])
    max_rows: int | None = Field(default=None, ge=0, examples=[50000000])


class Completeness(Frozen):
    column: str
    min_ratio: float = Field(ge=0, le=1, examples=[0.99])


class Quality(Frozen):
    freshness: Freshness | None = None
    volume: Volume | None = None
    completeness: tuple[Completeness, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()


class Policy(StrEnum):
    BACKWARDS_COMPATIBLE = "backwards_compatible"
    ANY = "any"


class ChangeClass(StrEnum):
    PATCH = "patch"
    MINOR = "minor"
    MAJOR = "major"


class Evolution(Frozen):
    policy: Policy = Policy.BACKWARDS_COMPATIBLE
    deprecation_window: Duration = "P30D"
    reader_lookback: Duration = "P14D"
    reclassify: dict[str, ChangeClass] = Field(
        default_factory=dict,
        description="Change code -> class, overriding the default classification.",
        examples=[{"DC-CK305": "major"}],
    )
    allow: tuple[str, ...] = Field(
        default=(), description="Change codes always allowed by the policy.", examples=[["DC-TB402"]]
    )
    deny: tuple[str, ...] = Field(
        default=(), description="Change codes the policy always refuses.", examples=[["DC-DS103"]]
    )

    _durations = field_validator("deprecation_window", "reader_lookback")(
        classmethod(lambda cls, v: _check_duration(v))
    )


class LifecycleStatus(StrEnum):
    DRAFT = "draft"
    ACTIVE = "active"
    DEPRECATED = "deprecated"
    RETIRED = "retired"


class Lifecycle(Frozen):
    status: LifecycleStatus = LifecycleStatus.ACTIVE
    successor: str | None = None


class Contract(Frozen):
    """One table's contract. `id` is the logical table (`schema.table` or `catalog.schema.table`)."""

    api_version: Literal["delta-contracts/v1"] = Field(alias="apiVersion", examples=["delta-contracts/v1"])
    id: str
    version: SemVer
    owner: Owner
    description: str | None = None
    consumers: tuple[Consumer, ...] = ()
    tags: tuple[str, ...] = ()
    table: TableSpec = TableSpec()
    columns: tuple[Column, ...] = Field(
        min_length=1, examples=[[{"name": "txn_id", "type": "bigint", "nullable": False}]]
    )
    constraints: tuple[TableConstraint, ...] = ()
    quality: Quality = Quality()
    evolution: Evolution = Evolution()
    lifecycle: Lifecycle = Lifecycle()

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        # YAML reads `version: 1.0` as a float; say it is not a version rather than "not a string".
        return _check_semver(str(value) if isinstance(value, int | float) else value)

    @field_validator("id")
    @classmethod
    def _table_id(cls, value: str) -> str:
        return check_table_id(value)

    @property
    def table_parts(self) -> TableId:
        return TableId.parse(self.id)

    def column(self, name: str) -> Column | None:
        """Look a column up the way Delta does: case-insensitively."""
        folded = name.casefold()
        return next((c for c in self.columns if c.name.casefold() == folded), None)


def semver_tuple(version: str) -> tuple[int, int, int]:
    match = _SEMVER.match(version)
    if not match:
        raise ValueError(f"'{version}' is not a semantic version")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))
