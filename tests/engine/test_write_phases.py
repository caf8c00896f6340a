"""`write()` in every phase of a migration (issue 45, item 4), on real Delta tables with rows.

Each case is a recipe migration of `payments.transactions` (tests/recipes.py) with a unique key, planned into
a migrations folder and applied phase by phase with the apply API, as a producer meets it: before apply,
after expand and populate, after the cutover (the stamp) and after the contract phase (forced past its
gate). In each phase the shape docs/migrations.md allows (the stamped version's: the old one until the
stamp, the new one after) is written twice, an append of new keys and a merge that updates a key written in
an earlier phase and inserts one; the shape it does not allow is refused, saying which to write, with
nothing committed. Then every row is read back, by key and value, from the table written and through the
contract's name: every live column holds what the producer's last write of that key says it must (a
rename's other side its value, so readers of either name see it; a dropped column the old producer's value
or, for a row the new producer inserted, NULL).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from delta_contracts.apply import apply
from delta_contracts.contract.model import Contract
from delta_contracts.contract.types import canonical
from delta_contracts.engine.base import Engine
from delta_contracts.marks import HOLD
from delta_contracts.plan.migrations import load_history, next_migration, write_migration
from delta_contracts.plan.ops import Phase, SetProperties
from delta_contracts.quality.shape import ShapeNotStampedError
from delta_contracts.quality.write import write
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId
from delta_contracts.target import DEFAULT_TARGET
from tests.engine.conftest import JVM
from tests.engine.recipe_run import create_schema
from tests.recipes import BASE, RECIPES, bump
from tests.tiers import EXHAUSTIVE

pytestmark = pytest.mark.engine

_schemas = itertools.count()

# Each column of every contract of the cases, and the field of a producer's row it carries.
FIELD = {
    "txn_id": "id",
    "txn_amt_paise": "amount",
    "amount_paise": "amount",
    "attempts": "attempts",
    "status": "status",
    "legacy_channel": "channel",
    "txn_date": "day",
}
PHASES = ("before apply", "after populate", "after cutover", "after contract")


def contracts(recipe: str, versioning: str, schema: str) -> tuple[Contract, Contract]:
    """The recipe's old and new contract in the test's schema, keyed on txn_id (so `write` merges)."""
    level, mutate = RECIPES[recipe]
    old = copy.deepcopy(BASE)
    old["id"] = f"{schema}.transactions"
    old["table"]["versioning"] = versioning
    old["quality"] = {"unique": [["txn_id"]]}
    new = copy.deepcopy(old)
    mutate(new)
    new["version"] = bump(old["version"], level)
    return Contract.model_validate(old), Contract.model_validate(new)


@dataclass
class Producer:
    """What the producers wrote, key by key: the value each live column must read."""

    engine: Engine
    old: Contract
    new: Contract
    migrations: Path
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    serial: itertools.count[int] = field(default_factory=itertools.count)

    def row(self, key: str) -> dict[str, Any]:
        n = next(self.serial)
        return {
            "id": key,
            "amount": 1000 + n,
            "attempts": n % 10,
            "status": ("OK", "FAILED")[n % 2],
            "channel": f"ch{n}",
            "day": date(2026, 11, 1 + n % 3),
        }

    def batch(self, shape: Contract, rows: list[dict[str, Any]]) -> Any:
        ddl = ", ".join(f"`{c.name}` {canonical(c.type)}" for c in shape.columns)
        values = [tuple(row[FIELD[c.name]] for c in shape.columns) for row in rows]
        return self.engine.spark.createDataFrame(values, schema=ddl)  # type: ignore[attr-defined]

    def write(self, shape: Contract, rows: list[dict[str, Any]], *, merge: bool) -> str:
        result = write(
            self.batch(shape, rows), self.new, engine=self.engine, merge=merge, migrations=self.migrations
        )
        assert result.written_as == shape.version, result
        assert result.how == ("merge" if merge else "append"), result
        carried = {FIELD[c.name] for c in shape.columns}
        for row in rows:
            before = self.rows.get(row["id"])
            # a field the shape does not carry: kept on a merged row, NULL on an inserted one
            kept = {f: (before or {}).get(f) for f in FIELD.values() if f not in carried}
            self.rows[row["id"]] = {**kept, **{f: row[f] for f in carried}}
        return result.table

    def check(self, table: str, name: str, where: str) -> None:
        """Every row read from `table` (and through the contract's name) holds the last written values."""
        for source in (table, name):
            got = self.engine.sql(f"SELECT * FROM {source}")
            by_key = {r["txn_id"]: r for r in got}
            assert sorted(by_key) == sorted(self.rows), f"{where}: {source} keys {sorted(by_key)}"
            assert len(got) == len(by_key), f"{where}: {source} holds a key twice"
            for key, want in self.rows.items():
                for column, value in by_key[key].items():
                    assert value == want[FIELD[column]], (where, source, key, column, value, want)


def plan_folder(root: Path, old: Contract, new: Contract) -> Path:
    """The migrations folder a project commits: the create of `old`, then the migration to `new`."""
    folder = root / "migrations" / old.id
    for contract in (old, new):
        planned = next_migration(load_history(folder) if folder.is_dir() else [], contract, DEFAULT_TARGET)
        assert planned is not None
        write_migration(folder, planned)
    return root / "migrations"


def refused(producer: Producer, shape: Contract, key: str, table: str, why: str) -> None:
    """A batch of the shape docs/migrations.md does not allow now: refused, naming the version to write,
    nothing committed."""
    before = producer.engine.history(_parts(table))[-1].version
    for merge in (False, True):
        with pytest.raises(ShapeNotStampedError, match=why):
            write(
                producer.batch(shape, [producer.row(key)]),
                producer.new,
                engine=producer.engine,
                merge=merge,
                migrations=producer.migrations,
            )
    assert producer.engine.history(_parts(table))[-1].version == before


def _shape(contract: Contract) -> list[tuple[str, str]]:
    return [(c.name, canonical(c.type)) for c in contract.columns]


def _parts(table: str) -> TableId:
    return TableId(p.strip("`") for p in table.split("."))


def run_matrix(engine: Engine, tmp_path: Path, recipe: str, versioning: str, through: str) -> None:
    """One table through the phases of the migration up to `through`, written in each."""
    schema = f"writes{next(_schemas)}_{engine.name}"
    create_schema(engine, schema)
    old, new = contracts(recipe, versioning, schema)
    migrations = plan_folder(tmp_path, old, new)
    producer = Producer(engine, old, new, migrations)
    name = x.sql(x.table(new.table_parts))

    def step(**options: Any) -> list[str]:
        result = apply(engine, migrations, tables=[new.id], **options)
        assert result.exit_code == 0, (result.refused, result.failure)
        return [r.kind for r in result.waiting]

    step(to_version=old.version)
    history = load_history(migrations / new.id)
    for n, phase in enumerate(PHASES[: PHASES.index(through) + 1]):
        if phase == "after populate":
            step(phases=["expand", "populate"])
        elif phase == "after cutover":
            step(phases=["expand", "populate", "cutover"])
        elif phase == "after contract":
            if not history[-1].migration.phase(Phase.CONTRACT):
                break  # nothing to drop: the cutover was the last phase
            assert step(), "the drop waits at its gate"
            step(force_reason="test: every reader moved")
        stamped = n >= 2
        shape, other = (new, old) if stamped else (old, new)
        appended = producer.write(shape, [producer.row(f"a{n}"), producer.row(f"b{n}")], merge=False)
        earlier = f"a{n - 1}" if n else f"a{n}"
        merged = producer.write(shape, [producer.row(earlier), producer.row(f"m{n}")], merge=True)
        # the table the stamped version's migration put its rows in: the write target switches at the stamp
        assert merged == appended == ".".join(history[-1 if stamped else -2].state.physical), phase
        # the refusal names the shape to write: the stamped version's
        if stamped:
            why = f"is stamped {new.version}: a batch in .* {old.version}'s shape is no longer written"
        else:
            why = f"is stamped {old.version}: a batch in .* {new.version}'s shape is written once the cutover"
        why += f".*write the {shape.version} shape"
        if _shape(other) != _shape(shape):
            refused(producer, other, f"r{n}", appended, why)
        producer.check(appended, name, f"{recipe}/{versioning} {phase}")


# The whole matrix runs in the exhaustive tier. `make test` runs the reported case on the embedded engine: an
# in-place rename's window up to its cutover (the drop held at its gate), where both names are live.
CASES = [
    pytest.param(engine, recipe, versioning, PHASES[-1], id=f"{engine}-{name}", marks=marks)
    for engine in ("local", "spark")
    for name, recipe, versioning in (
        ("rename", "rename_column", "in_place"),
        ("drop", "drop_column", "in_place"),
        ("widen", "widen_type", "in_place"),
        ("versioned", "rename_column", "versioned"),
        # an in-place table that a repartition moves behind an alias view: the table bearing the name is
        # renamed at the cutover, and both versions have one shape
        ("repartition", "change_partitioning", "in_place"),
    )
    for marks in [[JVM, EXHAUSTIVE] if engine == "spark" else [EXHAUSTIVE]]
]
CASES.append(pytest.param("local", "rename_column", "in_place", "after cutover", id="local-rename-window"))


@pytest.mark.parametrize(("engine_name", "recipe", "versioning", "through"), CASES)
def test_write_in_every_phase(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    engine_name: str,
    recipe: str,
    versioning: str,
    through: str,
) -> None:
    engine: Engine = request.getfixturevalue(f"{engine_name}_engine")
    run_matrix(engine, tmp_path, recipe, versioning, through)


def test_write_waits_out_a_hold_then_writes(local_engine: Engine, tmp_path: Path) -> None:
    """While `apply` holds producers off the table (`delta_contracts.hold` names an instant to come), `write`
    waits until that instant and then writes; a hold already past holds nobody."""
    schema = f"writes{next(_schemas)}_held"
    create_schema(local_engine, schema)
    old, new = contracts("rename_column", "in_place", schema)
    migrations = plan_folder(tmp_path, old, new)
    assert apply(local_engine, migrations, tables=[old.id], to_version=old.version).exit_code == 0
    producer = Producer(local_engine, old, new, migrations)
    table = old.table_parts

    def hold(seconds: float) -> datetime:
        until = datetime.now(UTC) + timedelta(seconds=seconds)
        value = until.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        local_engine.run(SetProperties(table=table, phase=Phase.CUTOVER, properties=((HOLD, value),)))
        return until

    for ahead, waits in ((-5.0, False), (3.0, True)):
        until = hold(ahead)
        began = datetime.now(UTC)
        producer.write(old, [producer.row(f"h{ahead}")], merge=False)
        ended = datetime.now(UTC)
        if waits:
            assert ended >= until, f"written at {ended}, while held until {until}"
        else:
            assert ended - began < timedelta(seconds=3), "a hold already past held the write"
    producer.check(x.sql(x.table(table)), x.sql(x.table(table)), "after the holds")
