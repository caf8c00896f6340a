"""Which contract version a batch is written as, and how its rows fill the live table's columns.

A table in the middle of a migration is stamped with one contract version while the contract in the
repository may already be the next one, and it may carry columns of both: an in-place rename's new column
from its expand on, the old one (deprecated) until its drop; a drop's column until the drop; a widened type
from the expand on. docs/migrations.md ("Writers during a migration") says what a producer may write: the
shape of the version the table is stamped with, the old one until the new stamp appears and the new one
from then on. So a batch is written as the stamped version when it has its shape, and refused, saying which
shape to write, when it has the shape of another version (the caller's or one the migrations folder holds):
a new shape before its cutover, an old one after it.

Its rows then fill every column the table has, not only the contract's: Sail's INSERT by name and a MERGE's
`*` need each of them, and a reader of a deprecated column must keep seeing rows during its deprecation
window. A column one side of a rename (`renamed_from`, in any version known) takes the value of the other
side the batch carries; a widened column takes the batch's narrower value cast up; any other column the
batch does not know is NULL (the migration's own backfills fill it, as they do for an old producer's rows),
and a generated or identity column is left to Delta.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlglot import exp

from delta_contracts.contract.model import Contract, semver_tuple
from delta_contracts.contract.types import canonical
from delta_contracts.errors import FailedError
from delta_contracts.live import LiveColumn, LiveTable
from delta_contracts.marks import STAMP_VERSION
from delta_contracts.quality.enforce import schema_problems
from delta_contracts.quality.locate import history_of
from delta_contracts.sql import expressions as x


class ShapeNotStampedError(FailedError):
    """The batch has the shape of a contract version the table is not stamped with (a new shape before the
    cutover stamps it, an old one after): nothing was written."""


@dataclass(frozen=True, slots=True)
class Fill:
    """One live column of the table and what the batch puts in it."""

    column: str
    value: exp.Expr  # over the batch's columns
    determined: bool  # from the batch (a MERGE updates it); False: NULL, left as it is on a matched row


def known_versions(contract: Contract, migrations: Path | None) -> list[Contract]:
    """The contract's versions the migrations folder holds (oldest first), and the caller's own."""
    history = [m.contract for m in history_of(contract.id, migrations)]
    if all(c.version != contract.version for c in history):
        history.append(contract)
    return history


def batch_shape(
    schema: Any, contract: Contract, live: LiveTable, known: Sequence[Contract], *, cast: bool
) -> Contract:
    """The version the batch is written as: the one the table is stamped with (the caller's when the table
    carries no stamp, or a stamp the migrations do not know). Raises ShapeNotStampedError when the batch has
    instead the shape of another version (the caller's, or one the migrations hold), saying which to write;
    a batch that fits no version is returned with the stamped one, whose `enforce` names its problems, and
    refused (ShapeNotStampedError) when the stamped version is not known, saying so."""
    stamp = live.properties.get(STAMP_VERSION)
    if stamp is None:
        return contract
    stamped = next((c for c in known if c.version == stamp), None)
    if stamped is None and contract.version == stamp:
        stamped = contract
    if stamped is not None and not schema_problems(schema, stamped, cast=cast):
        return stamped
    others = [contract, *reversed(known)]  # the caller's first, then the newest
    fits = next((c for c in others if c.version != stamp and not schema_problems(schema, c, cast=cast)), None)
    if fits is None and stamped is None:
        # most often the migrations folder was not found (write() run from another directory): the batch
        # may well have the stamped shape, which only that folder holds
        problems = "; ".join(schema_problems(schema, contract, cast=cast))
        raise ShapeNotStampedError(
            f"{live.name} is stamped {stamp}, and the migrations folder holds no contract {contract.id} "
            f"{stamp} (pass `migrations=` the project's migrations folder); this batch does not have the "
            f"shape of {contract.version} either ({problems}): nothing was written"
        )
    if fits is None:
        return stamped or contract
    differs = "; ".join(schema_problems(schema, stamped, cast=cast)) if stamped is not None else ""
    wanted = f"write the {stamp} shape" + (f" (this batch: {differs})" if differs else "")
    if semver_tuple(fits.version) > semver_tuple(stamp):
        raise ShapeNotStampedError(
            f"{live.name} is stamped {stamp}: a batch in {fits.id} {fits.version}'s shape is written once "
            f"the cutover stamps {fits.version} (`delta-contracts apply`); until then {wanted}"
        )
    raise ShapeNotStampedError(
        f"{live.name} is stamped {stamp}: a batch in {fits.id} {fits.version}'s shape is no longer written "
        f"since the cutover stamped {stamp}; {wanted}"
    )


def renames(known: Iterable[Contract]) -> list[tuple[str, str]]:
    """(old, new) column names of every rename the known versions declare."""
    return [
        (column.renamed_from.casefold(), column.name.casefold())
        for contract in known
        for column in contract.columns
        if column.renamed_from
    ]


def fills(live: LiveTable, shape: Contract, known: Sequence[Contract]) -> list[Fill]:
    """What the batch (in `shape`'s columns) puts in each live column, in the table's column order. Raises
    ShapeNotStampedError when a column of the batch has no column of the table to land in (the table drifted
    from the version it is stamped with): its values would be lost."""
    carried = {c.name.casefold(): c for c in shape.columns}
    pairs = renames(known)
    out: list[Fill] = []
    for column in live.columns:
        source = _source(column.name.casefold(), carried, pairs)
        if source is None and (column.generated or column.identity):
            continue  # Delta computes it
        if source is None:
            value: exp.Expr = exp.Cast(this=exp.Null(), to=x.data_type(column.type))
        else:
            value = _as_type(x.column(source.name), source.type, column)
        out.append(Fill(column.name, value.as_(column.name, quoted=True), source is not None))
    landed = {c.name.casefold() for c in live.columns}
    lost = [c.name for c in shape.columns if c.name.casefold() not in landed]
    if lost:
        raise ShapeNotStampedError(
            f"{live.name} has no column {', '.join(lost)} of {shape.id} {shape.version}, the version it is "
            "stamped with: nothing was written (`delta-contracts drift` shows how the table differs)"
        )
    return out


def _source(folded: str, carried: dict[str, Any], pairs: list[tuple[str, str]]) -> Any:
    """The batch column that fills a live column: itself, else the nearest name it had or took through the
    renames (a deprecated old column keeps serving its readers; a new column gets the value the backfill
    would give an old-shape row)."""
    seen, frontier = {folded}, [folded]
    while frontier:
        found = next((carried[name] for name in frontier if name in carried), None)
        if found is not None:
            return found
        frontier = [
            other
            for name in frontier
            for old, new in pairs
            for other in ((new,) if old == name else (old,) if new == name else ())
            if other not in seen
        ]
        seen.update(frontier)
    return None


def _as_type(value: exp.Expr, declared: str, column: LiveColumn) -> exp.Expr:
    if canonical(declared) == canonical(column.type):
        return value
    return exp.Cast(this=value, to=x.data_type(column.type))
