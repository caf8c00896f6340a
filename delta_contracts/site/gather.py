"""What the site shows of each table, gathered from the repository (contracts, their git history, the
migrations), the warehouse's own files when it is at hand (the apply ledger and the readers log, read with
delta-rs: no engine), and, given an engine, the live tables (stamp, drift).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.errors import InputError

if TYPE_CHECKING:
    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.load import LoadedContract, LoadedProject
    from delta_contracts.diff.history import ContractVersion
    from delta_contracts.engine.base import Engine
    from delta_contracts.state.record import Records, TableRecord
    from delta_contracts.tables.drift import DriftItem
    from delta_contracts.telemetry.coverage import Coverage
    from delta_contracts.telemetry.report import ObjectReport

APPLIED, PENDING, WAITING, FAILED, NOT_NEEDED, UNKNOWN = (
    "applied",
    "pending",
    "waiting at its gate",
    "failed",
    "not needed",
    "unknown",
)


@dataclass(frozen=True, slots=True)
class OpState:
    index: int
    phase: str
    summary: str
    state: str
    why: tuple[str, ...] = ()  # a gate's reasons, a failure's error, a forced op's reason


@dataclass(frozen=True, slots=True)
class MigrationState:
    migration_id: str
    from_version: str | None
    to_version: str
    strategy: str
    ops: tuple[OpState, ...]

    def phases(self) -> list[tuple[str, str]]:
        """(phase, state) in phase order: failed, waiting, pending or applied (the least advanced op wins)."""
        order = [FAILED, WAITING, PENDING, UNKNOWN, APPLIED, NOT_NEEDED]
        out: dict[str, str] = {}
        for op in self.ops:
            now = out.get(op.phase)
            out[op.phase] = op.state if now is None or order.index(op.state) < order.index(now) else now
        return list(out.items())


@dataclass(frozen=True, slots=True)
class Deprecation:
    object: str
    since: str  # the contract version that deprecated it
    replaced_by: str | None
    window: str  # deprecation_window (ISO-8601)
    marked_at: datetime | None  # when the mark reached the table (the ledger), if known
    ends_at: datetime | None


@dataclass(frozen=True, slots=True)
class TablePage:
    loaded: LoadedContract
    file: str
    history: list[ContractVersion]
    migrations: list[MigrationState]
    migrations_error: str
    deprecations: list[Deprecation]
    readers: list[ObjectReport]
    drift: list[DriftItem] | None  # None: no engine given
    live: dict[str, str] | None  # the live table and its stamp, with an engine
    validation: dict[str, Any] | None  # this table's entry of a recorded `validate --format json`

    @property
    def contract_id(self) -> str:
        return self.loaded.contract.id


@dataclass(frozen=True, slots=True)
class Site:
    pages: list[TablePage]
    generated_at: datetime
    sources: dict[str, str] = field(default_factory=dict)  # what was read: ledger, readers log, engine, …
    environment: str | None = None  # the environment the pages show (`--env`)
    # contract × environment (`status --all-envs`'s cells), when contracts.yml declares environments
    matrix: list[dict[str, object]] = field(default_factory=list)


def gather(
    contracts: Sequence[LoadedContract],
    project: LoadedProject,
    warehouse: Path,
    engine: Engine | None = None,
    validation: Path | None = None,
    now: datetime | None = None,
    names: NameMapping | None = None,
) -> Site:
    """`names`: the chosen environment's mapping; the migrations, deprecations and readers are read as that
    environment names its tables."""
    from delta_contracts.contract.environments import NameMapping
    from delta_contracts.contract.load import display_path
    from delta_contracts.diff.history import contract_history

    names = names or NameMapping()
    now = now or datetime.now(UTC)
    state_dir = warehouse / "_delta_contracts"
    records, ledger_note = _ledger(engine, state_dir, project, names)
    rows, readers_note = _reader_rows(state_dir)
    recorded = _validation(validation)
    sources = {"ledger": ledger_note, "readers log": readers_note}
    sources["live tables"] = f"engine {engine.name}" if engine is not None else "not read (no --engine)"
    if validation is not None:
        sources["validate"] = shown(validation)
    pages = []
    for loaded in sorted(contracts, key=lambda c: c.contract.id):
        contract = loaded.contract
        record = records.of(contract.id)
        migrations, error = _migrations(project, record, state_dir, now)
        drift, live = _live(engine, loaded, record, names) if engine is not None else (None, None)
        pages.append(
            TablePage(
                loaded,
                display_path(loaded.path),
                contract_history(loaded.path, project),
                migrations,
                error,
                _deprecations(loaded, record, names),
                _readers(loaded, rows, names, _coverage(project, loaded, state_dir, now)),
                drift,
                live,
                recorded.get(contract.id.casefold()),
            )
        )
    return Site(pages, now, sources)


def _ledger(
    engine: Engine | None, state_dir: Path, project: LoadedProject, names: NameMapping
) -> tuple[Records, str]:
    """The tables' records, from the engine's ledger or the one in the warehouse; a ledger that is not there
    or cannot be read leaves them without rows (their ops' states unknown), and the note says why."""
    from delta_contracts.state.record import Records
    from delta_contracts.state.state_table import StateTableError

    root = project.root / project.project.migrations
    if engine is None and not (state_dir / "ledger").is_dir():
        return Records(
            root, None, names
        ), f"no ledger at {state_dir / 'ledger'} (give --warehouse, or --engine)"
    try:
        records = Records.open(root, engine if engine is not None else state_dir, names)
    except StateTableError as err:
        return Records(root, None, names), f"ledger unreadable: {err}"
    where = records.ledger.where if engine is not None and records.ledger else shown(state_dir / "ledger")
    return records, f"ledger {where}"


def _reader_rows(state_dir: Path) -> tuple[list[dict[str, object]], str]:
    from delta_contracts.telemetry.log import read_rows
    from delta_contracts.telemetry.store import readers_path

    path = readers_path(state_dir)
    if not path.is_dir():
        return [], f"no readers log at {shown(path)}"
    return read_rows(state_dir), f"readers log {shown(path)}"


def shown(path: Path) -> str:
    """A path as the site shows it: relative to where the site was built, never the building machine's
    absolute path (the site is published and read elsewhere)."""
    return Path(os.path.relpath(path.resolve(), Path.cwd().resolve())).as_posix()


class ValidationFileError(InputError, ValueError):
    """The --validation file is not the JSON `validate --format json` writes."""


def _validation(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None:
        return {}
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        shown = f"--validation {path}: not the JSON `validate --format json` writes"
        raise ValidationFileError(f"{shown}: {err}") from None
    tables = payload.get("tables", []) if isinstance(payload, dict) else []
    return {str(t.get("contract", "")).casefold(): t for t in tables if isinstance(t, dict)}


def _migrations(
    project: LoadedProject, record: TableRecord, state_dir: Path, now: datetime
) -> tuple[list[MigrationState], str]:
    from delta_contracts.apply.gates import evaluate, mark_of
    from delta_contracts.contract.model import duration

    if record.unreadable is not None:
        return [], record.unreadable
    freshness = duration(project.project.telemetry.freshness)
    out = []
    for stored in record.history:
        migration = stored.migration
        skipped = record.before_baseline(stored)
        ops = []
        for index, op in enumerate(migration.ops, start=1):
            last = record.last_final(stored.migration_id, index)
            why: tuple[str, ...] = ()
            if not record.known:
                state = UNKNOWN
            elif skipped:
                state = NOT_NEEDED
                why = (f"the table was created at {record.baseline}",)
            elif last is not None and last.done:
                state = APPLIED
                why = (f"forced: {last.reason}",) if last.forced else ()
            elif last is not None:  # the latest final row of an op not done: it failed
                state, why = FAILED, (last.error,)
            elif (gate := op.gated_by()) is not None:
                mark = mark_of(migration.ops, op, gate)
                when = record.marked_at(stored.migration_id, mark) if mark else None
                verdict = evaluate(
                    replace(gate, objects=record.under_later_names(gate.objects)),
                    marked=when,
                    state_dir=state_dir,
                    now=now,
                    freshness=freshness,
                )
                state = PENDING if verdict.open else WAITING
                why = verdict.reasons or (f"gate open: {gate.describe()}",)
            else:
                state = PENDING
            ops.append(OpState(index, op.phase.value, op.summary(), state, why))
        out.append(
            MigrationState(
                stored.migration_id,
                migration.from_version,
                migration.to_version,
                migration.strategy,
                tuple(ops),
            )
        )
    return out, ""


def _deprecations(loaded: LoadedContract, record: TableRecord, names: NameMapping) -> list[Deprecation]:
    """Deprecated columns and the names a rename left behind; the mark's time from the ledger."""
    from delta_contracts.contract.model import Versioning, duration, semver_tuple

    contract = loaded.contract
    window = contract.evolution.deprecation_window
    marks = _mark_times(record)
    found = []
    table = str(names.physical(contract.table_parts)).casefold()
    for column in contract.columns:
        if column.deprecated is not None:
            name = column.name.casefold()
            found.append((f"{table}.{name}", name, column.deprecated.since, column.deprecated.replaced_by))
        if column.renamed_from:
            name = column.renamed_from.casefold()
            found.append((f"{table}.{name}", name, contract.version, column.name))
    if contract.table.versioning is Versioning.VERSIONED:  # the tables of earlier major versions
        major = semver_tuple(contract.version)[0]
        for old in range(1, major):
            found.append((f"{table}__v{old}", f"{table}__v{old}", f"{old + 1}.0.0", f"{table}__v{major}"))
    out = []
    for obj, key, since, replaced_by in found:
        marked = marks.get(key)
        ends = marked + duration(window) if marked else None
        out.append(Deprecation(obj, since, replaced_by, window, marked, ends))
    return out


def _mark_times(record: TableRecord) -> dict[str, datetime]:
    """Column (or deprecated table) -> when the toolkit first set its deprecation mark: the first succeeded
    mark op in the ledger."""
    from delta_contracts.marks import DEPRECATED_COLUMNS, DEPRECATED_TABLE

    out: dict[str, datetime] = {}
    for stored in record.history:
        for index, op in enumerate(stored.migration.ops, start=1):
            if not (op.marks(DEPRECATED_TABLE) or op.marks(DEPRECATED_COLUMNS)):
                continue
            properties = dict(op.properties)  # type: ignore[attr-defined]
            when = record.marked_at(stored.migration_id, index)
            if when is None:
                continue
            if properties.get(DEPRECATED_TABLE, "").casefold() == "true":
                out.setdefault(str(op.table).casefold(), when)
            for column in json.loads(properties.get(DEPRECATED_COLUMNS) or "[]"):
                out.setdefault(str(column).casefold(), when)
    return out


def _coverage(project: LoadedProject, loaded: LoadedContract, state_dir: Path, now: datetime) -> Coverage:
    """The readers log's coverage of the contract's `reader_lookback` (the window its drops' gates ask)."""
    from delta_contracts.contract.model import duration
    from delta_contracts.telemetry.coverage import coverage
    from delta_contracts.telemetry.log import retirements, watermarks

    since = now - duration(loaded.contract.evolution.reader_lookback)
    fresh_from = now - duration(project.project.telemetry.freshness)
    return coverage(watermarks(state_dir), since, fresh_from, retirements(state_dir))


def _readers(
    loaded: LoadedContract, rows: list[dict[str, object]], names: NameMapping, covered: Coverage
) -> list[ObjectReport]:
    """Readers per deprecated object of this table over time: every logged name of the table (its
    physical versions too) and every object the contract deprecates."""
    import re

    from delta_contracts.contract.environments import contract_in_environment
    from delta_contracts.telemetry.objects import deprecated_in_contract
    from delta_contracts.telemetry.report import build_report

    contract = contract_in_environment(loaded.contract, names)
    table = re.escape(contract.id.casefold())
    mine = re.compile(rf"^{table}(?:__v\d+)?(?:\.[^.]+)?$")
    logged = sorted({str(r["object"]) for r in rows if mine.match(str(r["object"]))})
    objects = list(dict.fromkeys([*deprecated_in_contract(contract), *logged]))
    if not objects:
        return []
    consumers = tuple(c.name for c in contract.consumers)
    relevant = [r for r in rows if mine.match(str(r["object"]))]
    return build_report(relevant, objects, dict.fromkeys(objects, consumers), coverage=covered)


def _live(
    engine: Engine, loaded: LoadedContract, record: TableRecord, names: NameMapping
) -> tuple[list[DriftItem], dict[str, str]]:
    from delta_contracts.marks import STAMP_VERSION
    from delta_contracts.plan.column_order import history_order
    from delta_contracts.tables.drift import alias_drift, commit_drift, table_drift

    contract = loaded.contract
    history = record.history
    views = engine.views()
    where = record.location(contract, views, lambda t: engine.describe(t) is not None)
    physical = where.current
    table = engine.describe(physical)
    stamped = None if table is None else table.properties.get(STAMP_VERSION)
    order = history_order(history, stamped or contract.version, physical) if history else None
    items = table_drift(contract, table, physical, order) + alias_drift(contract, physical, views, where.read)
    if table is not None:
        items += commit_drift(engine.history(physical), lambda v: record.claimed(physical, v))
    live = {
        "table": str(physical),
        "exists": "yes" if table is not None else "no",
        "stamped": (table.properties.get(STAMP_VERSION) if table is not None else None) or "-",
    }
    return items, live
