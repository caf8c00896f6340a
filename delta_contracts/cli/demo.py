"""`delta-contracts demo` (`make demo`): the main job end to end on the embedded engine — the life of the
example tables.

The example project (contracts/ and migrations/ of the repository, shipped in the package as cli/files/demo)
is copied into a folder of the demo's own, a temporary one removed at the end unless `--folder` names one to
keep, and made a git repository; every step runs there, so the demo reads none of the user's contracts and
leaves nothing in the user's folder. lint → diff against the last commit → plan --check → `apply`
sales.orders up to 1.0.0, load rows, `apply` every committed migration (additive; rename + drop in place;
versioned table behind the alias view) — the drops wait at their gates and the demo says why → the other
tables created from their contracts, a row that breaks a CHECK refused by Delta → deprecation telemetry: a
consumer that keeps reading the retired version is collected from a query history, named in the report, and
keeps the gate shut → history, status, drift (and an out-of-band change it finds) → the drops forced with a
recorded reason → a summary with timings. Only the in-place DROP COLUMNS reaches delta-spark (the JVM); the
rest runs on Sail.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from delta_contracts.cli.errors import UsageError
from delta_contracts.errors import FailedError

EXAMPLE = Path(__file__).resolve().parent / "files" / "demo"
WAREHOUSE = Path("warehouse")  # inside the demo's folder, which is the working folder while it runs
TIMINGS: list[tuple[str, float]] = []
# What would steer the demo's commands away from its own project and engine.
_SETTINGS = (
    "DELTA_CONTRACTS_ENGINE",
    "DELTA_CONTRACTS_URL",
    "DELTA_CONTRACTS_WAREHOUSE",
    "DELTA_CONTRACTS_ENV",
)


class DemoStoppedError(FailedError):
    """A step of the demo ended otherwise than it must: the demo stops there (exit 1)."""


def _run(*argv: str, expect: int = 0) -> None:
    from delta_contracts.cli import build_app  # the whole command line, which holds this command too

    print(f"\n$ delta-contracts {' '.join(argv)}", flush=True)
    try:
        # Outside standalone mode a command's exit code is returned, not raised.
        returned = build_app()(list(argv), standalone_mode=False)
        code = int(returned) if isinstance(returned, int) else 0
    except SystemExit as done:
        code = int(done.code or 0)
    if code != expect:
        raise DemoStoppedError(f"the demo stopped: `delta-contracts {argv[0]}` exited {code}, not {expect}")


def _step(title: str) -> None:
    TIMINGS.append((title, time.perf_counter()))
    print(f"\n== {title} ==", flush=True)


def _warehouse(*argv: str) -> tuple[str, ...]:
    return (*argv, "--engine", "local", "--warehouse", str(WAREHOUSE))


def _git_repository(folder: Path) -> bool:
    """Commit the example project, so that `diff --base HEAD` has a last commit; False without git."""
    git = shutil.which("git")
    if git is None:
        return False
    # The demo's own identity, no signing: the user's git configuration must not stop the demo's commit.
    settings = ["-c", "user.name=delta-contracts demo", "-c", "user.email=demo@localhost", "-c",
                "commit.gpgsign=false"]  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the example project"]):
        subprocess.run([git, *settings, *args], cwd=folder, check=True, capture_output=True)
    return True


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Work in `folder` with none of the user's engine settings; put both back after."""
    saved = {name: os.environ.pop(name) for name in _SETTINGS if name in os.environ}
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
        os.environ.update(saved)


def main(with_git: bool) -> None:
    from delta_contracts.engine.local.engine import LocalEngine

    started = time.perf_counter()
    _step("the contracts: lint, diff against the last commit, migrations current")
    _run("lint", "contracts")
    if with_git:
        _run("diff", "--base", "HEAD", "contracts")
    else:
        print("\n(git is not installed: the diff against the last commit is left out)")
    _run("plan", "--check")
    WAREHOUSE.mkdir()

    _step("sales.orders at 1.0.0, with rows")
    _run(*_warehouse("apply", "--table", "sales.orders", "--to", "1.0.0"))
    with LocalEngine(WAREHOUSE) as engine:
        engine.sql(
            "INSERT INTO `sales`.`orders` VALUES "
            "(1, 42, 1299.00, 'PLACED', DATE'2026-11-20', TIMESTAMP'2026-11-20 10:00:00'), "
            "(2, 43, 45.00, 'SHIPPED', DATE'2026-11-21', TIMESTAMP'2026-11-21 09:30:00'), "
            "(3, 44, 7.50, 'DELIVERED', DATE'2026-11-21', TIMESTAMP'2026-11-21 11:15:00')"
        )
        print("loaded 3 orders into sales.orders (1.0.0)")

    _step("every committed migration of sales.orders; the drops wait at their gates")
    _run(*_warehouse("apply", "--table", "sales.orders"))
    with LocalEngine(WAREHOUSE) as engine:
        rows = engine.sql("SELECT `order_id`, `order_total`, `status` FROM `sales`.`orders` ORDER BY 1")
        if ("sales", "orders") in {key[-2:] for key in engine.views()}:
            print("sales.orders (the alias view over sales.orders__v3) now reads:")
        else:  # 3.0.0 is versioned: its cutover waits behind 2.0.0's held drops (docs/migrations.md)
            print("sales.orders (still the 2.0.0 table: 3.0.0's cutover waits behind the held drops) reads:")
        for row in rows:
            print("  " + ", ".join(f"{name} {value}" for name, value in row.items()))

    _step("the other tables, created from their contracts; Delta enforces the rules")
    _run(*_warehouse("create", "contracts/payments", "contracts/sales/customers.yaml"))
    _refused_row()

    _telemetry()

    _step("what ran, where each table stands, and drift")
    _run(*_warehouse("history", "sales.orders"))
    _run(*_warehouse("status"))
    _run(*_warehouse("drift"))
    print("\nan out-of-band change: somebody drops a CHECK by hand")
    from deltalake import DeltaTable

    DeltaTable(str(WAREHOUSE / "payments" / "transactions")).alter.drop_constraint("currency_regex")
    _run(*_warehouse("drift", "contracts/payments"), expect=1)

    _step("the owner approves the drops: forced, with the reason recorded")
    reason = "DEMO-1: finance-recon moved to sales.orders (approved by commerce-platform)"
    _run(*_warehouse("apply", "--table", "sales.orders", "--force", "--reason", reason))
    _run(*_warehouse("history", "sales.orders"))
    _run(*_warehouse("status", "contracts/sales/orders.yaml"))

    TIMINGS.append(("end", time.perf_counter()))
    print("\n== summary ==")
    for (title, at), (_, after) in itertools.pairwise(TIMINGS):
        print(f"  {after - at:6.1f} s  {title}")
    print(f"  {time.perf_counter() - started:6.1f} s  in all")


def _refused_row() -> None:
    from delta_contracts.engine.local.engine import LocalEngine

    with LocalEngine(WAREHOUSE) as engine:
        statement = (
            "INSERT INTO `sales`.`orders__v3` VALUES (9, 44, -1, 'PLACED', 'web', DATE'2026-11-22', "
            "TIMESTAMP'2026-11-22 08:00:00')"
        )
        try:
            engine.sql(statement)
        except Exception as refused:  # Sail reports Delta's violation as a Spark Connect AnalysisException
            message = str(refused).strip()
            if "DELTA_VIOLATE_CONSTRAINT" not in message:
                raise
            print(
                f"a negative order_total was refused, as the contract says: {message.splitlines()[0][:140]}"
            )
            return
        raise DemoStoppedError("the demo stopped: the row breaking order_total_min was accepted (no CHECK)")


def _history(path: Path, batch: str, start: datetime, days: int, still_reading: bool) -> None:
    """A query-history export: a dashboard reads sales.orders daily; `finance-recon` (no declared consumer)
    reads its deprecated `coupon_code` and `amount` while still_reading."""
    rows = []
    for day in range(days):
        at = start + timedelta(days=day, hours=9)
        rows.append(("analytics-mart", "SELECT status, count(*) FROM sales.orders GROUP BY status", at))
        if still_reading:
            rows.append(("finance-recon", f"SELECT coupon_code FROM sales.orders WHERE order_id = {day}", at))
            rows.append(("finance-recon", "SELECT order_id, amount FROM sales.orders WHERE order_id = 1", at))
    if still_reading:  # a broken statement naming the table: a possible reader
        rows.append(("finance-recon", "SELECT amount FROM sales.orders WHERE", start))
    with path.open("w", encoding="utf-8") as out:
        for n, (user, text, at) in enumerate(rows):
            row = {"statement_id": f"{batch}-{n}", "statement_text": text, "executed_by": user,
                   "start_time": at.isoformat(), "client_application": "Databricks SQL"}  # fmt: skip
            out.write(json.dumps(row) + "\n")


def _telemetry() -> None:
    from delta_contracts.telemetry.gate import readers_gate

    _step("deprecation telemetry: who still reads deprecated objects")
    now = datetime.now(UTC).replace(microsecond=0)
    dropped = ["sales.orders__v2", "sales.orders.coupon_code", "sales.orders.amount"]
    # The same source collected daily (here: an export rewritten between runs)
    export = WAREHOUSE / "query_history.jsonl"
    _history(export, "day0", now - timedelta(days=31), 31, still_reading=True)
    _run(*_warehouse("telemetry", "collect", "--source", f"query-history:{export}"))
    _run("telemetry", "report", "--since", "30d", "--warehouse", str(WAREHOUSE))
    _run("telemetry", "report", "--format", "html", "-o", str(WAREHOUSE / "readers.html"), "--warehouse",
         str(WAREHOUSE))  # fmt: skip
    verdict = readers_gate(WAREHOUSE / "_delta_contracts", dropped, timedelta(days=14), now)
    print(f"sunset gate now: {'open' if verdict.open else 'SHUT'}")
    for reason in verdict.reasons:
        print(f"  {reason}")
    print("\napply meets the same gate: the drops stay held, with the readers named")
    _run(*_warehouse("apply", "--table", "sales.orders"))
    _step("15 days later: finance-recon stopped reading; the daily collection goes on")
    later = now + timedelta(days=15)
    _history(export, "day15", now + timedelta(days=1), 15, still_reading=False)
    _run(*_warehouse("telemetry", "collect", "--source", f"query-history:{export}"))
    verdict = readers_gate(WAREHOUSE / "_delta_contracts", dropped, timedelta(days=14), later)
    print(f"sunset gate 15 days later: {'open' if verdict.open else 'SHUT'}")
    for reason in verdict.reasons:
        print(f"  {reason}")


FolderOption = Annotated[
    Path | None,
    typer.Option(
        "--folder",
        help="Build the demo's project and warehouse in this folder (missing or empty) and keep them; "
        "default: a temporary folder, removed at the end.",
        show_default=False,
    ),
]


def demo_command(folder: FolderOption = None) -> None:
    """The life of the example tables, in a folder of the demo's own.

    The example project ships in the package; nothing in the working folder is read or written. The demo
    applies every committed migration of sales.orders, shows the drops held at their gates and why,
    telemetry naming a reader, history, status and drift, then forces the drops with a recorded reason."""
    if folder is not None and folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(
            f"{folder} is not an empty folder: the demo builds its project in a folder of its own"
        )
    where = folder.resolve() if folder is not None else Path(tempfile.mkdtemp(prefix="delta-contracts-demo-"))
    try:
        for part in ("contracts", "migrations"):
            shutil.copytree(EXAMPLE / part, where / part)
        with_git = _git_repository(where)
        print(f"the example project, copied to {where}" + (" and committed to git" if with_git else ""))
        with _inside(where):
            main(with_git)
    finally:
        TIMINGS.clear()
        if folder is None:
            shutil.rmtree(where, ignore_errors=True)
    if folder is not None:
        print(
            f"the project and its warehouse are in {where}: `delta-contracts site -o site` there shows them"
        )
