"""`read`: consumer-side pinning. A version spec (`^2`, `~2.1`, `2.1.0`) resolves to the object serving it.

Candidates, in order: the table or alias view named by the contract id (its live stamp, or the stamp of the
versioned table the alias view reads); the versioned name `<table>__v<major>` (a deprecated versioned table,
or the compatibility view left after its drop); and, during an in-place major's deprecation window, the old
shape projected from the live table while its deprecated columns still exist. Nothing matches: fail fast
with what changed. A served version that is deprecated warns, naming the successor and the window left.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from delta_contracts.contract.model import Contract, semver_tuple
from delta_contracts.contract.types import canonical
from delta_contracts.errors import FailedError, InputError
from delta_contracts.live import LiveTable
from delta_contracts.marks import DEPRECATED_COLUMNS, DEPRECATED_TABLE, STAMP_VERSION
from delta_contracts.quality.locate import history_of
from delta_contracts.quality.rules import duration
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine
    from delta_contracts.plan.stored import StoredMigration

_SPEC = re.compile(r"^\s*(\^|~|=)?\s*(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?\s*$")


class PinNotServedError(FailedError, LookupError):
    """No live object serves the pinned version; the message says what changed since."""


class VersionSpecError(InputError, ValueError):
    """A version spec a reader pinned is not one of the forms `read` takes (^2, ~2.1, 2.1.0)."""


class DeprecatedVersionWarning(UserWarning):
    """The pinned version is still served, but it is on its way out."""


@dataclass(frozen=True, slots=True)
class VersionSpec:
    text: str
    low: tuple[int, int, int]
    high: tuple[int, int, int]  # exclusive

    def allows(self, version: str) -> bool:
        return self.low <= semver_tuple(version) < self.high


def parse_spec(text: str) -> VersionSpec:
    """`^2` / `^2.1.0` (same major), `~2.1` (same minor), `2.1.0` / `=2.1.0` (exact), `2` / `2.x` (= `^2`)."""
    match = _SPEC.match(text)
    if not match:
        raise VersionSpecError(f"'{text}' is not a version spec (use ^2, ~2.1 or 2.1.0)")
    op, major_text, minor_text, patch_text = match.groups()
    major = int(major_text)
    minor = int(minor_text) if minor_text and minor_text.isdigit() else None
    patch = int(patch_text) if patch_text and patch_text.isdigit() else None
    low = (major, minor or 0, patch or 0)
    if op == "~" and minor is not None:
        return VersionSpec(text, low, (major, minor + 1, 0))
    if op in (None, "=") and minor is not None and patch is not None:
        return VersionSpec(text, low, (major, minor, patch + 1))
    if major == 0 and minor is not None:  # ^0.y: minor versions may break
        return VersionSpec(text, low, (0, minor + 1, 0))
    return VersionSpec(text, low, (major + 1, 0, 0))


@dataclass(frozen=True, slots=True)
class Served:
    contract_id: str
    version: str  # the contract version whose shape the reader gets
    name: str  # the object read
    kind: str  # in_place | alias_view | versioned_table | compatibility_view | deprecated_columns
    columns: tuple[str, ...] = ()  # a projection of the object (deprecated_columns), else all of it
    deprecated: bool = False
    successor: str | None = None
    window_left: timedelta | None = None

    def query(self) -> exp.Select:
        table = x.table(TableId.parse(self.name))
        columns: list[exp.Expr] = [x.column(c) for c in self.columns] or [exp.Star()]
        return exp.select(*columns).from_(table)


def read(
    spark_or_engine: Any,
    contract_id: str,
    version: str,
    *,
    migrations: Path | None = None,
    now: datetime | None = None,
) -> Any:
    """A DataFrame of `contract_id` in the shape of the newest version matching `version`.

    `migrations` is the migrations folder (default ./migrations), whose contract snapshots say what each
    version looked like. Raises PinNotServedError when nothing serves the pin; warns with
    DeprecatedVersionWarning when the served version is deprecated.
    """
    from delta_contracts.engine.select import as_engine

    engine = as_engine(spark_or_engine)
    now = now or datetime.now(UTC)
    served = resolve(engine, contract_id, version, migrations=migrations, now=now)
    if served.deprecated:
        left = _window_text(served.window_left, now)
        warnings.warn(
            DeprecatedVersionWarning(
                f"{served.contract_id} {served.version} (read from {served.name}, {served.kind}) is "
                f"deprecated: move to {served.successor}; {left}"
            ),
            stacklevel=2,
        )
    return engine.spark.sql(x.sql(served.query()))  # type: ignore[attr-defined]


def resolve(
    engine: Engine,
    contract_id: str,
    version: str,
    *,
    migrations: Path | None = None,
    now: datetime | None = None,
) -> Served:
    spec = parse_spec(version)
    history = history_of(contract_id, migrations if migrations is not None else Path("migrations"))
    if not history:
        raise PinNotServedError(f"{contract_id}: no migrations found, so no version is known")
    matching = [m.contract for m in history if spec.allows(m.contract.version)]
    latest = history[-1].contract
    if not matching:
        known = ", ".join(m.contract.version for m in history)
        raise PinNotServedError(f"{contract_id} has no version matching {spec.text} (versions: {known})")
    wanted = max(matching, key=lambda c: semver_tuple(c.version))
    window = duration(latest.evolution.deprecation_window)
    views = {_key(k): v for k, v in engine.views().items()}
    now = now or datetime.now(UTC)
    parts = latest.table_parts

    current = _current(engine, parts, views)
    stamp_now = current[1] if current is not None else None  # the version readers of the contract's name get
    # What a deprecated version's readers move to: the newest version served, not one merely planned.
    successor = f"{latest.id} {stamp_now or latest.version}"
    if current is not None:
        kind, stamp, live = current
        if stamp is not None and spec.allows(stamp):
            shape = next((m.contract for m in history if m.contract.version == stamp), None)
            return Served(contract_id, stamp, str(parts), kind, _projection(live, shape))

    versioned = TableId((*parts[:-1], f"{parts[-1]}__v{semver_tuple(wanted.version)[0]}"))
    old = engine.describe(versioned)
    if old is not None and (stamp := old.properties.get(STAMP_VERSION)) and spec.allows(stamp):
        deprecated = old.properties.get(DEPRECATED_TABLE) == "true"
        left = _window_left(old, DEPRECATED_TABLE, window, now) if deprecated else None
        return Served(contract_id, stamp, str(versioned), "versioned_table", (), deprecated, successor, left)
    if _key(versioned) in views:
        broken = unreadable_view(engine, versioned)
        if broken is not None:
            raise PinNotServedError(
                f"{contract_id} {spec.text}: the compatibility view {versioned} that serves "
                f"{wanted.version} no longer reads ({broken}); a later migration removed or changed what it "
                f"reads. Read version ^{semver_tuple(stamp_now or latest.version)[0]} instead"
            )
        return Served(contract_id, wanted.version, str(versioned), "compatibility_view", (), True, successor)

    # A version newer than the live one is planned, not served: the live table is no "deprecated" shape of it.
    nothing = current is None and old is None  # nothing was ever created, or it is all planned
    if nothing or (stamp_now is not None and semver_tuple(wanted.version) > semver_tuple(stamp_now)):
        raise PinNotServedError(_not_served_yet(contract_id, spec, wanted, history, stamp_now))
    if current is not None and _has_shape(current[2], wanted):
        live = current[2]
        left = _window_left(live, DEPRECATED_COLUMNS, window, now)
        columns = tuple(c.name for c in wanted.columns)
        return Served(
            contract_id, wanted.version, str(parts), "deprecated_columns", columns, True, successor, left
        )
    since = [m.contract for m in history if semver_tuple(m.contract.version) >= semver_tuple(wanted.version)]
    raise PinNotServedError(_not_served(contract_id, spec, since, current))


def unreadable_view(engine: Engine, view: TableId) -> str | None:
    """Why the view cannot be read (its first line: a column or table it reads is gone), or None."""
    from delta_contracts.contract.errors import first_line
    from delta_contracts.engine.spark.errors import spark_errors

    probe = exp.select(exp.Star()).from_(x.table(view)).limit(0)
    try:
        engine.sql(x.sql(probe))
    except spark_errors() as err:
        return first_line(err)
    return None


def _key(table: TableId) -> TableId:
    return TableId(p.casefold() for p in table)


def _current(
    engine: Engine, parts: TableId, views: dict[TableId, str]
) -> tuple[str, str | None, LiveTable] | None:
    """The object named by the contract id: (kind, stamped version, the table holding the data)."""
    table = engine.describe(parts)
    if table is not None:
        return "in_place", table.properties.get(STAMP_VERSION), table
    query = views.get(_key(parts))
    if query is None:
        return None
    read_from = next(iter(x.parse(query).find_all(exp.Table)), None)
    if read_from is None:
        return None
    names = [p.name for p in (read_from.args.get("catalog"), read_from.args.get("db"), read_from.this) if p]
    target = TableId(names if len(names) > 1 else (*parts[:-1], *names))
    live = engine.describe(target)
    if live is None:
        return None
    return "alias_view", live.properties.get(STAMP_VERSION), live


def _projection(live: LiveTable, shape: Contract | None) -> tuple[str, ...]:
    """The pinned version's columns when the table still carries others (deprecated ones awaiting their
    drop): a pin returns its version's shape, never a column that version no longer has."""
    if shape is None or not _has_shape(live, shape):
        return ()
    wanted = {c.name.casefold() for c in shape.columns}
    if all(c.name.casefold() in wanted for c in live.columns):
        return ()
    return tuple(c.name for c in shape.columns)


def _has_shape(live: LiveTable, contract: Contract) -> bool:
    """Every column of the pinned version is still there with its type (an in-place major's window)."""
    for column in contract.columns:
        stored = live.column(column.name)
        if stored is None or canonical(stored.type) != canonical(column.type):
            return False
    return True


def _not_served(
    contract_id: str,
    spec: VersionSpec,
    steps: list[Contract],
    current: tuple[str, str | None, LiveTable] | None,
) -> str:
    """What changed for a reader of `steps[0]`: the breaking changes of each migration since, in order."""
    from delta_contracts.diff.compare import diff

    wanted, latest = steps[0], steps[-1]
    live = f"live version {current[1]}" if current and current[1] else "no live table"
    lines = [
        f"{contract_id} {spec.text} is not served any more ({live}): no table or compatibility view keeps "
        f"the {wanted.version} shape. Breaking changes since:"
    ]
    for before, after in pairwise(steps):
        lines += [
            f"  - {after.version}: {change.message}"
            for change in diff(before, after)
            if change.change_class.value == "major"
        ]
    served = current[1] if current and current[1] else latest.version
    lines.append(f"  read version ^{semver_tuple(served)[0]} instead")
    return "\n".join(lines)


def _not_served_yet(
    contract_id: str, spec: VersionSpec, wanted: Contract, history: list[StoredMigration], live: str | None
) -> str:
    """A pin of a version planned but not live yet: the migrations that will serve it (their cutover makes
    it the live version), and what to read until then."""
    pending = [
        m.migration_id
        for m in history
        if (live is None or semver_tuple(m.contract.version) > semver_tuple(live))
        and semver_tuple(m.contract.version) <= semver_tuple(wanted.version)
    ]
    now = f"live version {live}" if live else "no live table"
    until = f"; read version ^{semver_tuple(live)[0]} until then" if live else ""
    return (
        f"{contract_id} {spec.text} is not served yet ({now}): {wanted.version} is served once the cutover "
        f"of {', '.join(pending)} has run (`delta-contracts apply`){until}"
    )


def _window_left(live: LiveTable, mark: str, window: timedelta, now: datetime) -> timedelta | None:
    """Deprecation window left: from the first commit that carried the mark (read from the Delta log)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        history = DeltaTable(live.location.removeprefix("file:")).history()
    except (DeltaError, OSError):
        return None
    marked = [
        int(entry["timestamp"])
        for entry in history
        if mark in json.dumps(entry.get("operationParameters") or {}) and "timestamp" in entry
    ]
    if not marked:
        return None
    since = datetime.fromtimestamp(min(marked) / 1000, UTC)
    return since + window - now


def _window_text(left: timedelta | None, now: datetime) -> str:
    if left is None:
        return "no drop scheduled (kept until a migration removes it)"
    ends = f"{now + left:%Y-%m-%d %H:%M} UTC"
    if left <= timedelta(0):
        ended = f"its deprecation window ended {spoken(-left)} ago ({ends})"
        return f"{ended}: it may be dropped at the next apply"
    return f"{spoken(left)} of its deprecation window left (it ends {ends})"


def spoken(span: timedelta) -> str:
    """A duration in words, to its two largest units, rounded down: `29 days 23 hours`, `5 minutes`."""
    seconds = int(span.total_seconds())
    units = (("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1))
    parts: list[str] = []
    for name, size in units:
        count, seconds = divmod(seconds, size)
        if count or parts:
            parts.append(f"{count} {name}{'' if count == 1 else 's'}")
        if len(parts) == 2:
            break
    shown = [part for part in parts if not part.startswith("0 ")]
    return " ".join(shown) or "0 seconds"
