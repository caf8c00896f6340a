"""The `delta-3` target executed: run with the Python of `.venv-delta3` (PySpark 3.5 + delta-spark 3.3).

`python -m tests.engine.delta3_run WAREHOUSE [RECIPE/VERSIONING …]` plans every recipe of `tests/recipes.py`
× {in_place, versioned} for target delta-3, creates the old table through the spark engine, writes rows,
applies the migration phase by phase (an old-shape producer writes one more row before cutover), checks every
pre-check (apply_op counts it), every postcondition after its op, that re-applying skips every op, and that
the rows read through the contract's name are the rows written, reshaped as the new contract says. Prints
one JSON object: case -> {"status": "ok" | "refused" | "failed", "detail": …}. tests/engine/test_delta3.py
drives it; this module imports no pytest so the second virtualenv needs only what the package needs.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

ROWS: tuple[dict[str, Any], ...] = (
    {
        "txn_id": "t1",
        "txn_amt_paise": 1250,
        "attempts": 1,
        "status": "OK",
        "legacy_channel": "web",
        "txn_date": date(2026, 11, 1),
    },
    {
        "txn_id": "t2",
        "txn_amt_paise": 99,
        "attempts": None,
        "status": "OK",
        "legacy_channel": None,
        "txn_date": date(2026, 11, 2),
    },
)
LATE_ROW: dict[str, Any] = {
    "txn_id": "t3",
    "txn_amt_paise": 7,
    "attempts": 2,
    "status": "OK",
    "legacy_channel": "app",
    "txn_date": date(2026, 11, 2),
}


def cases() -> list[str]:
    from tests.recipes import RECIPES

    return [f"{recipe}/{versioning}" for recipe in RECIPES for versioning in ("in_place", "versioned")]


def _text(value: Any) -> str:
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return "NULL" if value is None else str(value)


def normalised(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Order-independent rows, values as text (so 12 and Decimal('12') agree)."""
    return sorted(
        json.dumps({k.casefold(): _text(v) for k, v in row.items()}, sort_keys=True) for row in rows
    )


def expected_rows(old: Any, new: Any, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the new contract says they read: renamed, kept, filled or defaulted (literals only)."""
    from sqlglot import exp

    from delta_contracts.plan import expressions as x

    def literal(text: str) -> Any:
        tree = x.parse(text)
        if not isinstance(tree, exp.Literal):
            raise AssertionError(f"recipes use literal fills, got {text!r}")
        return tree.this if tree.is_string else int(tree.this)

    out = []
    for row in rows:
        values = {k.casefold(): v for k, v in row.items()}
        shaped: dict[str, Any] = {}
        for column in new.columns:
            source = (column.renamed_from or column.name).casefold()
            if source in values and old.column(source) is not None:
                shaped[column.name] = values[source]
            elif getattr(column, "fill", None) is not None:
                shaped[column.name] = literal(column.fill)
            else:
                shaped[column.name] = column.default
        out.append(shaped)
    return out


def write_rows(engine: Any, table: tuple[str, ...], rows: Sequence[Mapping[str, Any]]) -> None:
    """Append as a producer's DataFrame job does: column defaults do not apply, missing columns are NULL."""
    from delta_contracts.plan import expressions as x

    spark = engine.spark
    name = x.sql(x.table(table))
    target = spark.table(name)
    names = list(rows[0])
    frame = spark.createDataFrame([tuple(r[n] for n in names) for r in rows], names)
    for field in target.schema.fields:
        if field.name in names:
            frame = frame.withColumn(field.name, frame[field.name].cast(field.dataType))
    frame.write.format("delta").mode("append").saveAsTable(name)


def run_migration(engine: Any, migration: Any, where: str, before_cutover: Any = None) -> None:
    from delta_contracts.plan.ops import Phase

    for phase in Phase:
        if phase is Phase.CUTOVER and before_cutover is not None:
            before_cutover()
        for i, op in enumerate(migration.phase(phase)):
            step = f"{where} {phase.value}[{i}] {op.kind}"
            outcome = engine.apply_op(op, tag=step)  # counts the op's pre-check, stops on a violation
            post = op.postcondition()
            if post is not None and outcome.path != "skipped" and not engine.holds(post):
                raise AssertionError(f"{step}: postcondition {post} does not hold after {op.summary()}")
    ran = [o.op_kind for o in (engine.apply_op(op) for op in migration.ops) if o.path != "skipped"]
    if ran:
        raise AssertionError(f"{where}: re-applying ran {ran}")


def run_case(engine: Any, case: str, schema: str) -> None:
    from sqlglot import exp

    from delta_contracts.plan import expressions as x
    from delta_contracts.plan.planner import plan
    from delta_contracts.target import Target
    from tests.recipes import pair

    recipe, versioning = case.split("/")
    old, new = (c.model_copy(update={"id": f"{schema}.transactions"}) for c in pair(recipe, versioning))
    engine.sql(x.sql(exp.Create(this=x.ident(schema), kind="SCHEMA", exists=True)))
    created, state = plan(None, old, Target.DELTA_3)
    run_migration(engine, created, f"{case} create")
    write_rows(engine, state.physical, ROWS)
    migration, _ = plan(old, new, Target.DELTA_3, state=state)  # PlanError: a refusal, reported as such
    run_migration(
        engine, migration, case, before_cutover=lambda: write_rows(engine, state.physical, [LATE_ROW])
    )
    got = engine.sql(x.sql(exp.select(exp.Star()).from_(x.table(new.table_parts))))
    if sorted(got[0]) != sorted(c.name for c in new.columns):
        raise AssertionError(
            f"the name serves {sorted(got[0])}, the contract says {[c.name for c in new.columns]}"
        )
    want = expected_rows(old, new, [*ROWS, LATE_ROW])
    if normalised(got) != normalised(want):
        raise AssertionError(f"rows through the name {got} != expected {want}")
    engine.sql(
        x.sql(exp.Drop(tables=[exp.Table(db=x.ident(schema))], kind="SCHEMA", exists=True, cascade=True))
    )


def main(argv: Sequence[str]) -> int:
    import pyspark

    from delta_contracts.engine.spark import SparkEngine, local_delta_session
    from delta_contracts.plan.planner import PlanError

    warehouse = Path(argv[0])
    wanted = list(argv[1:]) or cases()
    session = local_delta_session("delta-contracts-delta3", warehouse, target="delta-3")
    engine = SparkEngine(session, warehouse / "_delta_contracts")
    results: dict[str, dict[str, str]] = {
        "_versions": {
            "status": "info",
            "detail": f"pyspark {pyspark.__version__}, {engine.sql('SELECT version() AS v')[0]['v']}",
        }
    }
    try:
        for n, case in enumerate(wanted):
            try:
                run_case(engine, case, f"delta3_{n}")
            except PlanError as err:
                results[case] = {"status": "refused", "detail": str(err)}
            except Exception:  # every failure is reported per case, with its traceback, to the driving test
                results[case] = {"status": "failed", "detail": traceback.format_exc()[-4000:]}
            else:
                results[case] = {"status": "ok", "detail": ""}
            progress = f"{case}: {results[case]['status']}\n{results[case]['detail'][-1500:]}".rstrip()
            print(progress, file=sys.stderr, flush=True)
    finally:
        session.stop()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
