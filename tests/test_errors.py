"""Every error of the package derives from one base that carries its exit code, and those codes are the ones
the command reference documents.

Imports every module of the package (none starts Spark at import; pyspark is imported lazily inside
functions), so that an exception class added anywhere is checked without being listed here.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import delta_contracts
from delta_contracts.cli import app
from delta_contracts.errors import DeltaContractsError, ExitCode

REPO = Path(__file__).resolve().parents[1]

# Exceptions of the package that are not errors, and why.
NOT_ERRORS = {
    # Thrown to stop a worker's parse that takes too long and caught by the same module; a BaseException on
    # purpose, so that sqlglot's own `except Exception` cannot swallow it. It never reaches a caller.
    "delta_contracts.telemetry.workers._TooSlow",
    # A warning category (warnings.warn), not something raised to stop a command.
    "delta_contracts.quality.read.DeprecatedVersionWarning",
    # Raised and caught inside contract/nested.py, where a walk down two types finds no field-by-field change;
    # its text becomes part of the DC-MF107 message. It never reaches a caller.
    "delta_contracts.contract.nested.NotFieldwiseError",
}


def _package_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(delta_contracts.__path__, "delta_contracts."):
        if info.name.endswith(".__main__"):
            continue  # running it is the command line itself
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


EXCEPTIONS = _package_exceptions()


def test_the_walk_finds_the_package_errors() -> None:
    """The walk sees modules deep in the package, not only its top (a guard on the test itself)."""
    names = set(EXCEPTIONS)
    assert {
        "delta_contracts.contract.errors.ContractError",
        "delta_contracts.engine.retry.CommitConflictError",
        "delta_contracts.state.lease.LeaseHeldError",
        "delta_contracts.telemetry.workers._TooSlow",
    } <= names
    assert len(names) >= 25


def test_every_error_derives_from_the_base() -> None:
    outside = sorted(
        name
        for name, cls in EXCEPTIONS.items()
        if name not in NOT_ERRORS and not issubclass(cls, DeltaContractsError)
    )
    assert outside == [], "derive these from delta_contracts.errors.DeltaContractsError (or a kind of it)"


def test_the_named_exceptions_are_not_errors() -> None:
    """The exceptions left out above still exist and still are no DeltaContractsError."""
    assert set(EXCEPTIONS) >= NOT_ERRORS
    assert not any(issubclass(EXCEPTIONS[name], DeltaContractsError) for name in NOT_ERRORS)


def _documented_codes() -> dict[str, int]:
    """The number the command reference gives each meaning of an exit status."""
    text = re.sub(r"\s+", " ", (REPO / "docs" / "commands.md").read_text(encoding="utf-8"))
    phrases = {
        "ok": r"Exit codes\.\*\* (\d) ok;",
        "finding": r"; (\d) a finding, a violation, drift or a missing migration;",
        "unusable input": r"; (\d) unusable input \(",
        "op failed": r"apply`.*?Exit \d done \(or waiting at gates\), (\d) an op failed",
        "held": r"apply`.*?, (\d) another runner holds a table",
    }
    found = {}
    for meaning, pattern in phrases.items():
        match = re.search(pattern, text)
        assert match is not None, f"docs/commands.md no longer says which code means {meaning!r}"
        found[meaning] = int(match.group(1))
    return found


DOCUMENTED = _documented_codes()


def test_exit_codes_are_the_documented_ones() -> None:
    assert DOCUMENTED["ok"] == ExitCode.OK
    assert ExitCode.FAILED == DOCUMENTED["finding"] == DOCUMENTED["op failed"]
    assert DOCUMENTED["unusable input"] == ExitCode.BAD_INPUT
    assert DOCUMENTED["held"] == ExitCode.HELD


# What each error means for the command it stops, in the words of docs/commands.md and README's table.
MEANINGS = {
    "unusable input": [
        "delta_contracts.plan.building.FeatureLossError",  # plan: a change would lose a declared feature
        "delta_contracts.plan.building.FieldChangeError",  # plan: a field change Delta cannot make in place
        "delta_contracts.plan.building.TableLimitError",  # plan: a statement the table's properties forbid
        "delta_contracts.plan.unity.UnityCatalogRefusedError",  # plan: an op Unity Catalog OSS cannot run
        "delta_contracts.errors.InputError",
        "delta_contracts.quality.locate.ContractNotFoundError",  # read/write/enforce: no contract by that id
        "delta_contracts.quality.read.VersionSpecError",  # read: a version pin that is no spec
        "delta_contracts.quality.enforce.EnforceModeError",  # enforce/write: an unknown mode
        "delta_contracts.quality.write.NoMergeKeyError",  # write: merge asked, no unique key declared
        "delta_contracts.telemetry.log.RetireError",  # telemetry retire: no reason, or an unknown source
        "delta_contracts.site.gather.ValidationFileError",  # site --validation: not validate's JSON
        "delta_contracts.contract.errors.ContractError",  # a broken contract
        "delta_contracts.contract.types.TypeParseError",
        "delta_contracts.interchange.odcs_import.OdcsError",  # import odcs: 2 invalid
        "delta_contracts.diff.gitbase.GitError",  # diff --base: a ref git cannot read
        "delta_contracts.diff.gitbase.GitMissingError",
        "delta_contracts.paths.OutsideRootError",
        "delta_contracts.contract.environments.MappingError",  # an environment's mapping breaks an id
        "delta_contracts.plan.migrations.IntegrityError",  # apply refuses a tampered folder
        "delta_contracts.apply.runner.ApplyRefusedError",  # apply: 2 bad input
        "delta_contracts.apply.runner.ChecksumMismatchError",
        "delta_contracts.apply.discard.DiscardRefusedError",  # discard: exit 2 when it ran
        "delta_contracts.telemetry.sources.SourceError",  # telemetry collect: 2 bad source
        "delta_contracts.engine.spark.session.SparkConfError",  # a bad option
        "delta_contracts.engine.spark.session.CatalogLockedError",  # another process has the metastore
        "delta_contracts.engine.base.EngineChoiceError",  # an engine that cannot start
        "delta_contracts.engine.jars.JarsUnavailableError",
        "delta_contracts.state.state_table.StateTableError",
        "delta_contracts.plan.ops.UnknownOpKindError",  # a migration file naming no known op
        "delta_contracts.tableid.BadTableIdError",  # a table name that is no schema.table
        "delta_contracts.cli.errors.UsageError",  # a bad option or argument
        "delta_contracts.cli.errors.EngineStartError",  # an engine that cannot start
    ],
    "op failed": [
        "delta_contracts.errors.DeltaContractsError",  # an error of no narrower kind
        "delta_contracts.errors.FailedError",
        "delta_contracts.engine.base.EngineError",
        "delta_contracts.engine.base.PartialOpError",
        "delta_contracts.engine.local.time_travel.UnreadableVersionError",  # a past version local cannot read
        "delta_contracts.engine.base.PreconditionFailedError",
        "delta_contracts.engine.base.ChangedSinceFenceError",  # a drop losing rows written after the fence
        "delta_contracts.engine.retry.CommitConflictError",
        "delta_contracts.plan.ops.DuplicateOpKindError",  # two op classes of one kind: the package is broken
        "delta_contracts.cli.demo.DemoStoppedError",  # demo: a step ended otherwise than it must
    ],
    "finding": [
        "delta_contracts.plan.building.PlanError",  # plan: a change refused as declared
        "delta_contracts.tables.create.ContractMismatchError",  # create: 1 differs
        "delta_contracts.tables.create.PendingMigrationError",
        "delta_contracts.quality.enforce.ContractViolationError",  # validate: 1 a rule fails
        "delta_contracts.quality.shape.ShapeNotStampedError",  # write: 1 another version's shape
        "delta_contracts.quality.write.ContractTableMissingError",  # ... or a table is missing
        "delta_contracts.quality.read.PinNotServedError",
    ],
    "held": [
        "delta_contracts.errors.TableHeldError",
        "delta_contracts.state.lease.LeaseHeldError",  # apply: 3 another runner holds the table
        "delta_contracts.state.lease.LeaseLostError",
    ],
}


@pytest.mark.parametrize(
    ("name", "meaning"), [(name, meaning) for meaning, names in MEANINGS.items() for name in names]
)
def test_each_error_carries_its_documented_code(name: str, meaning: str) -> None:
    assert name in EXCEPTIONS, f"{name} is gone: update MEANINGS"
    assert EXCEPTIONS[name].exit_code == DOCUMENTED[meaning]  # type: ignore[attr-defined]


def test_every_error_has_a_meaning() -> None:
    """A new error says which documented code it ends a command with."""
    listed = {name for names in MEANINGS.values() for name in names}
    assert sorted(set(EXCEPTIONS) - NOT_ERRORS - listed) == []


def test_builtin_bases_are_kept() -> None:
    """Callers catch these by their builtin kind (`except ValueError`, `except LookupError`)."""
    for name, base in {
        "delta_contracts.paths.OutsideRootError": ValueError,
        "delta_contracts.contract.types.TypeParseError": ValueError,
        "delta_contracts.plan.building.PlanError": ValueError,
        "delta_contracts.telemetry.sources.SourceError": ValueError,
        "delta_contracts.engine.spark.session.SparkConfError": ValueError,
        "delta_contracts.quality.read.PinNotServedError": LookupError,
        "delta_contracts.quality.write.ContractTableMissingError": LookupError,
        "delta_contracts.quality.locate.ContractNotFoundError": LookupError,
        "delta_contracts.quality.read.VersionSpecError": ValueError,
        "delta_contracts.quality.enforce.EnforceModeError": ValueError,
        "delta_contracts.quality.write.NoMergeKeyError": ValueError,
        "delta_contracts.telemetry.log.RetireError": ValueError,
        "delta_contracts.site.gather.ValidationFileError": ValueError,
    }.items():
        assert issubclass(EXCEPTIONS[name], base), name


def test_the_package_exports_the_base() -> None:
    assert delta_contracts.DeltaContractsError is DeltaContractsError


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "contracts", tmp_path / "contracts")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_command_stopped_by_an_error_ends_with_its_code(project: Path) -> None:
    """The codes the commands end with are the errors' own (no engine starts: the choice fails first)."""
    from delta_contracts.engine.base import EngineChoiceError

    unknown = CliRunner().invoke(app, ["status", "--engine", "duckdb"])
    assert "unknown engine 'duckdb'" in unknown.output
    assert unknown.exit_code == EngineChoiceError.exit_code == DOCUMENTED["unusable input"]

    from delta_contracts.diff.gitbase import GitError

    no_repository = CliRunner().invoke(app, ["diff", "--base", "HEAD"])  # tmp_path is no git repository
    assert no_repository.output.startswith("error: ")
    assert no_repository.exit_code == GitError.exit_code == DOCUMENTED["unusable input"]


def test_an_error_no_command_caught_ends_with_its_line_and_code() -> None:
    """The command line's last resort: one line and the error's own code, never a traceback."""
    code = (
        "import delta_contracts.cli as cli\n"
        "from delta_contracts.errors import InputError\n"
        "def failing(*args, **kwargs):\n"
        "    def run():\n"
        "        raise InputError('contracts/x.yaml:3: field `owner`: not a string\\nmore detail')\n"
        "    return run\n"
        "cli.build_app = failing\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == ExitCode.BAD_INPUT
    assert done.stderr == "error: contracts/x.yaml:3: field `owner`: not a string\n"


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["plan", "--target", "delta-9"], "error: --target must be one of delta-3, delta-4, databricks\n"),
        (["lint", "contracts/missing.yaml"], "error: no such file or folder: contracts/missing.yaml\n"),
        (["apply", "--reason", "why"], "error: --reason goes with --force or --break-lease\n"),
        (["status", "--engine", "duckdb"], None),  # EngineChoiceError, raised in the engine's choice
    ],
)
def test_an_error_out_of_a_command_is_printed_once_with_its_code(
    project: Path, args: list[str], stderr: str | None
) -> None:
    """The command line's one mapping: a DeltaContractsError a command raises is printed once, as `error: `
    and its message on stderr, ends the command with the error's code, and shows no traceback."""
    done = CliRunner().invoke(app, args)
    assert done.exit_code == ExitCode.BAD_INPUT
    assert isinstance(done.exception, SystemExit)  # mapped, not an exception CliRunner caught
    assert done.stdout == ""
    if stderr is not None:
        assert done.stderr == stderr
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("error: ") == 1
    assert "Traceback" not in done.output


def test_every_command_error_goes_through_the_one_mapping() -> None:
    """An error raised inside any registered command, whatever the command, is mapped the same way."""
    import typer

    from delta_contracts.cli import build_app
    from delta_contracts.errors import TableHeldError

    application = build_app("diff")

    @application.command("boom")
    def boom() -> None:
        raise TableHeldError("sales.orders: held by runner r1\nmore detail")

    done = CliRunner().invoke(application, ["boom"])
    assert done.exit_code == ExitCode.HELD
    assert done.stderr == "error: sales.orders: held by runner r1\nmore detail\n"
    assert isinstance(done.exception, SystemExit)
    assert isinstance(typer.Exit(0), RuntimeError)  # typer's Exit is no DeltaContractsError: never mapped


def test_the_mapping_also_runs_under_main(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "delta_contracts", "plan", "--target", "delta-9"],
        capture_output=True,
        text=True,
        cwd=project,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == ExitCode.BAD_INPUT
    assert done.stdout == ""
    assert done.stderr == "error: --target must be one of delta-3, delta-4, databricks\n"
