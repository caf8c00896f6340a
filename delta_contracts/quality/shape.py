"""Which contract version a batch is written as, and how its rows fill the live table's columns.

A table in the middle of a migration is stamped with one contract version while the contract in the
repository may already be the next one, and it may carry columns of both: an in-place rename's new column
from its expand on, the old one (deprecated) until its drop; a drop's column until the drop; a widened type
from the expand on. docs/migrations.md ("Writers during a migration") says what a producer may write: the
shape of the version the table is stamped with, the old one until the new stamp appears and the new one
from then on. So a batch is checked against the version whose shape it has, among the one the table is
stamped with and the one the caller named, and refused when that version is not the stamped one (a new
shape before its cutover, an old one after it), saying which to write.

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
    """The version the batch is written as: the stamped one when the batch has its shape, else the caller's
    when the table is stamped with it (or carries no stamp). Raises ShapeNotStampedError when the batch has
    the shape of a version the table is not stamped with, naming the version to write."""
    stamp = live.properties.get(STAMP_VERSION)
    stamped = next((c for c in known if c.version == stamp), None)
    if stamp is None or stamp == contract.version:
        return contract
    if stamped is not None and not schema_problems(schema, stamped, cast=cast):
        return stamped
    if schema_problems(schema, contract, cast=cast):
        return stamped or contract  # the batch fits neither: its problems are reported against it (enforce)
    if semver_tuple(contract.version) > semver_tuple(stamp):
        raise ShapeNotStampedError(
            f"{live.name} is stamped {stamp}: a batch in {contract.id} {contract.version}'s shape is written "
            f"once the cutover stamps {contract.version} (`delta-contracts apply`); until then write the "
            f"{stamp} shape"
        )
    raise ShapeNotStampedError(
        f"{live.name} is stamped {stamp}: a batch in {contract.id} {contract.version}'s shape is no longer "
        f"written; write the {stamp} shape"
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
    """What the batch (in `shape`'s columns) puts in each live column, in the table's column order."""
    carried = {c.name.casefold(): c for c in shape.columns}
    pairs = renames(known)
    out: list[Fill] = []
    for column in live.columns:
        folded = column.name.casefold()
        source = _source(folded, carried, pairs)
        if source is None and (column.generated or column.identity):
            continue  # Delta computes it
        if source is None:
            value: exp.Expr = exp.Cast(this=exp.Null(), to=x.data_type(column.type))
        else:
            value = _as_type(x.column(source.name), source.type, column)
        out.append(Fill(column.name, value.as_(column.name, quoted=True), source is not None))
    return out


def _source(folded: str, carried: dict[str, Any], pairs: list[tuple[str, str]]) -> Any:
    """The batch column that fills a live column: itself, else the other side of a rename it is part of."""
    if folded in carried:
        return carried[folded]
    for old, new in pairs:
        if folded == old and new in carried:
            return carried[new]  # the deprecated old column keeps serving its readers
        if folded == new and old in carried:
            return carried[old]  # the new column an old-shape row will have anyway after the backfill
    return None


def _as_type(value: exp.Expr, declared: str, column: LiveColumn) -> exp.Expr:
    if canonical(declared) == canonical(column.type):
        return value
    return exp.Cast(this=value, to=x.data_type(column.type))
