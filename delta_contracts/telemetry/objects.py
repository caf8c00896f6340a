"""What telemetry watches: the deprecated objects, who is known to read them, and what the SQL may name.

Deprecated objects come from the contracts (columns marked `deprecated:`, the old names of renamed columns,
the old physical tables of versioned contracts) and from the live tables' deprecation marks
(`delta_contracts.deprecated.*` table properties the planner's `mark_deprecated` op sets).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delta_contracts.sql.extract import Catalog
from delta_contracts.sql.names import path_key
from delta_contracts.telemetry.names import Names

if TYPE_CHECKING:
    from delta_contracts.contract.model import Contract
    from delta_contracts.engine.base import Engine
    from delta_contracts.live import LiveTable


@dataclass(frozen=True, slots=True)
class Watched:
    """The deprecated objects and, per object, the consumers the contract declares."""

    objects: tuple[str, ...]
    consumers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    catalog: Catalog = field(default_factory=Catalog)
    locations: Mapping[str, str] = field(default_factory=dict)  # storage path -> table name (path reads)
    # Among `objects`: the other names a deprecated object was read under at some time (the alias and
    # compatibility views that served it, its table's earlier names). Their reads are logged under the
    # canonical name of what they read at the statement's time (`telemetry.names`).
    via: tuple[str, ...] = ()
    # Among `via`: the names that served a deprecated *table* as a whole while it was the live one (the
    # contract's alias view, the table's name before a rename). A read of one of them as a whole followed the
    # name to what it served then, the current version, never a deprecated table: it is not logged.
    followers: tuple[str, ...] = ()

    @property
    def deprecated(self) -> tuple[str, ...]:
        return tuple(o for o in self.objects if o not in set(self.via))


def deprecated_in_contract(contract: Contract) -> list[str]:
    from delta_contracts.contract.model import Versioning, semver_tuple

    table = contract.id.casefold()
    found = []
    for column in contract.columns:
        if column.deprecated is not None:
            found.append(f"{table}.{column.name.casefold()}")
        if column.renamed_from:
            found.append(f"{table}.{column.renamed_from.casefold()}")
    if contract.table.versioning is Versioning.VERSIONED:
        major = semver_tuple(contract.version)[0]
        found.extend(f"{table}__v{old}" for old in range(1, major))
    return found


def _live_unmarked(live: Mapping[str, LiveTable] | None) -> set[str]:
    """The live tables that carry no deprecation mark of the whole table: the version readers get now, or
    one a planned migration has not deprecated yet (its cutover's mark never ran)."""
    from delta_contracts.marks import DEPRECATED_TABLE

    return {
        name.casefold()
        for name, table in (live or {}).items()
        if table.properties.get(DEPRECATED_TABLE, "").casefold() != "true"
    }


def deprecated_in_live(name: str, live: LiveTable) -> list[str]:
    """The objects a live table's deprecation marks name (`name` is how the contracts call the table)."""
    from delta_contracts.marks import DEPRECATED_COLUMNS, DEPRECATED_TABLE

    table = name.casefold()
    found = []
    if live.properties.get(DEPRECATED_TABLE, "").casefold() == "true":
        found.append(table)
    raw = live.properties.get(DEPRECATED_COLUMNS)
    if raw:
        try:
            columns = json.loads(raw)
        except json.JSONDecodeError:
            columns = [c.strip() for c in raw.split(",")]
        found.extend(f"{table}.{str(c).casefold()}" for c in columns if str(c).strip())
    return found


def unmarked_in_ledger(where: Any) -> set[str]:
    """The tables the ledger at `where` (a state folder, a state table) says the toolkit made (created, or
    renamed to) and never marked deprecated as a whole: an older version's table whose cutover's mark has not
    run is not deprecated yet. None without a ledger, or one that cannot be read."""
    from delta_contracts.marks import DEPRECATED_TABLE
    from delta_contracts.state.ledger import DONE, Status
    from delta_contracts.state.record import ledger_rows
    from delta_contracts.state.state_table import StateTableError

    try:
        entries = ledger_rows(where)
    except (StateTableError, OSError):
        return set()

    made: set[str] = set()
    marked: set[str] = set()
    for entry in entries:
        if entry.status not in DONE and entry.status != Status.CREATED:
            continue
        table = entry.table.casefold()
        if entry.op_kind in ("create_table", "rename_table"):
            made.add(table)
        elif entry.op_kind == "mark_deprecated" and DEPRECATED_TABLE in entry.sql:
            marked.add(table)
    return made - marked


def watched(
    contracts: Sequence[Contract],
    live: Mapping[str, LiveTable] | None = None,
    views: Mapping[str, str] | None = None,
    extra: Iterable[str] = (),
    history: Names | None = None,
) -> Watched:
    """Deprecated objects (contracts + live marks + `extra`), consumers, and the catalog for extraction.

    With `history` (the ledger's history of views and tables), a view's schema is every column it ever served
    (a statement through it is resolved at its own time, later), and the names that served a deprecated
    object at some time are watched too (`Watched.via`)."""
    from delta_contracts.plan.building import versioned_name

    objects: list[str] = [o.casefold() for o in extra]
    consumers: dict[str, tuple[str, ...]] = {}
    schemas: dict[str, tuple[str, ...]] = {}
    current = _live_unmarked(live)
    tables: list[str] = []  # the deprecated objects that are whole tables
    for contract in contracts:
        table = contract.id.casefold()
        # An older version's table is deprecated once the cutover away from it marked it, not before.
        mine = [o for o in deprecated_in_contract(contract) if o not in current]
        tables.extend(o for o in mine if o.startswith(f"{table}__v"))
        objects.extend(mine)
        names = tuple(c.name for c in contract.consumers)
        for obj in [table, *mine]:
            consumers[obj] = names
        columns = tuple(c.name.casefold() for c in contract.columns)
        deprecated_columns = tuple(o.rsplit(".", 1)[1] for o in mine if o.rsplit(".", 1)[0] == table)
        # Queries may still name columns the contract has deprecated or renamed away.
        known = tuple(dict.fromkeys(columns + deprecated_columns))
        schemas[table] = known
        schemas[str(versioned_name(contract)).casefold()] = known
    for name, live_table in (live or {}).items():
        found = deprecated_in_live(name, live_table)
        tables.extend(o for o in found if o == name.casefold())
        objects.extend(found)
        for obj in found:
            consumers.setdefault(obj, consumers.get(name.casefold(), ()))
        # The live table may still hold columns the contract has already dropped (a drop held at its gate):
        # a query naming them reads the live table, so they belong to its schema too.
        live_columns = tuple(c.name.casefold() for c in live_table.columns)
        schemas[name.casefold()] = tuple(dict.fromkeys(schemas.get(name.casefold(), ()) + live_columns))
    via: list[str] = []
    followers: list[str] = []
    if history is not None:
        for view in history.views():
            schemas[view] = tuple(dict.fromkeys(schemas.get(view, ()) + history.served_columns(view)))
        deprecated = list(dict.fromkeys(objects))
        for obj in deprecated:
            via.extend(v for v in history.via(obj) if v not in deprecated)
            if obj in tables:
                followers.extend(v for v in history.via(obj) if v not in deprecated)
            for other in history.via(obj):
                consumers.setdefault(other, consumers.get(obj, ()))
    locations = {path_key(t.location): name.casefold() for name, t in (live or {}).items() if t.location}
    catalog = Catalog({k.casefold(): v for k, v in (views or {}).items()}, schemas, locations)
    via = list(dict.fromkeys(via))
    objects = list(dict.fromkeys([*objects, *via]))
    return Watched(tuple(objects), consumers, catalog, locations, tuple(via), tuple(dict.fromkeys(followers)))


def watched_on(engine: Engine, contracts: Sequence[Contract], extra: Iterable[str] = ()) -> Watched:
    """`watched` with the live tables' deprecation marks, locations and the engine's views."""
    from delta_contracts.contract.model import semver_tuple
    from delta_contracts.plan.building import versioned_name

    live: dict[str, LiveTable] = {}
    for contract in contracts:
        names = [contract.table_parts]
        names += [versioned_name(contract, m) for m in range(1, semver_tuple(contract.version)[0] + 1)]
        for parts in names:
            table = engine.describe(parts)
            if table is not None:
                live[str(parts)] = table
    views = {str(view): text for view, text in engine.views().items()}
    return watched(contracts, live, views, extra, Names.load(engine.ledger_table()))
