"""A separate `apply` process for the crash and race tests: `python apply_child.py SPEC_JSON`.

SPEC: warehouse, migrations, contract, to_version, force_reason, batch_rows, kill_on (SIGKILL itself at the
boundary of that name), killed_log (where the boundary it died at is appended), hold (seconds to sleep at the
first boundary, so that a racing process meets the lease), engine (`local`, the default, or `spark`: a local
delta-spark session of its own, whose in-memory catalog lives as long as the process), metastore (spark: a
Hive metastore in the warehouse instead, so that the tables outlive the process; one process at a time),
insert_rows (after applying, load the test rows), fingerprint_out (write the fingerprints of the schemas named
in `fingerprint` there as JSON, after applying when `migrations` is given, else instead), before (specs of
applies to run first in the same process and engine, each of which must succeed: on `spark` that spares a JVM
start per step). Exits with apply's exit code.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta_contracts.engine.base import Engine


def main() -> int:
    spec = json.loads(sys.argv[1])
    with _engine(spec) as engine:
        for step in spec.get("before", ()):
            code = _apply(engine, {**spec, "kill_on": None, **step})
            if code != 0:
                return code
        code = _apply(engine, spec) if spec.get("migrations") else 0
        if spec.get("fingerprint_out") and code == 0:
            from tests.engine.apply_support import fingerprint

            prints = {schema: fingerprint(engine, schema) for schema in spec["fingerprint"]}
            Path(spec["fingerprint_out"]).write_text(json.dumps(prints, default=str), encoding="utf-8")
    return code


def _apply(engine: Engine, spec: dict[str, Any]) -> int:
    from delta_contracts.apply import apply

    seen = 0

    def boundary(name: str) -> None:
        nonlocal seen
        seen += 1
        if seen == 1 and spec.get("hold"):
            time.sleep(float(spec["hold"]))
        if name == spec.get("kill_on"):
            with Path(spec["killed_log"]).open("a", encoding="utf-8") as log:
                log.write(name + "\n")
            os.kill(os.getpid(), signal.SIGKILL)

    result = apply(
        engine,
        spec["migrations"],
        tables=[spec["contract"]],
        to_version=spec.get("to_version"),
        force_reason=spec.get("force_reason"),
        batch_rows=spec.get("batch_rows", 1_000_000),
        on_boundary=boundary,
    )
    if spec.get("insert_rows") and result.exit_code == 0:
        from tests.engine.apply_support import insert_rows

        insert_rows(engine, spec["contract"].split(".")[0])
    for held in result.held:
        print(f"held by another runner: {held}")
    if result.failure is not None:
        print(f"failed: {result.failure.summary}: {result.failure.detail}")
    for contract, error in result.refused:
        print(f"refused {contract}: {error}")
    return result.exit_code


def _engine(spec: dict[str, Any]) -> Engine:
    warehouse = Path(spec["warehouse"])
    if spec.get("engine", "local") == "local":
        from delta_contracts.engine.local import LocalEngine

        return LocalEngine(warehouse)
    from delta_contracts.engine.spark import SparkEngine, local_delta_session
    from tests.engine.session_conf import FAST_SMALL_QUERIES

    extra = dict(FAST_SMALL_QUERIES)
    if spec.get("metastore"):
        extra |= {
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={warehouse / 'metastore_db'};create=true"
            ),
            # derby.log in the warehouse
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={warehouse}",
        }
    session = local_delta_session(warehouse=warehouse, extra=extra)
    engine = SparkEngine(session, warehouse / "_delta_contracts", owns_session=True)
    # delta-spark does not create schemas for CREATE TABLE
    for step in [spec, *spec.get("before", ())]:
        if "contract" in step:
            engine.sql(f"CREATE SCHEMA IF NOT EXISTS `{step['contract'].split('.')[0]}`")
    return engine


if __name__ == "__main__":
    sys.exit(main())
