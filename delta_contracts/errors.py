"""The package's exit codes, defined once, and the base of its errors: each error carries the exit code a
command ends with when that error is what stopped it.

Every exception the package raises derives from `DeltaContractsError` through one of three kinds: bad input
(exit 2), a failed op or check (exit 1), another runner holding the table (exit 3). An error that also is a
builtin kind keeps that base, so that callers' `except ValueError` or `except LookupError` still catch it:
`class OutsideRootError(InputError, ValueError)`.

This module imports nothing of the package, so that any module may import it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """What a command's exit status means (docs/commands.md, "Exit codes")."""

    OK = 0  # done, clean, or waiting at gates
    FAILED = 1  # a finding, a violation, drift, a missing migration, or an op that failed
    BAD_INPUT = 2  # unusable input: a broken contract or migration, a bad option, an engine that cannot start
    HELD = 3  # another runner holds the table


class DeltaContractsError(Exception):
    """The base of every error of the package; `exit_code` is the status a command ends with because of it."""

    exit_code: ClassVar[ExitCode] = ExitCode.FAILED


class InputError(DeltaContractsError):
    """The input cannot be used as it is: a contract, a migration folder, an option, a source, a state table
    or an engine setting. Nothing ran because of it."""

    exit_code: ClassVar[ExitCode] = ExitCode.BAD_INPUT


class FailedError(DeltaContractsError):
    """An op or a check failed: the table differs, a rule or a precondition does not hold, a commit lost."""

    exit_code: ClassVar[ExitCode] = ExitCode.FAILED


class TableHeldError(DeltaContractsError):
    """Another runner holds the table (or took it over from us): run again when it is done."""

    exit_code: ClassVar[ExitCode] = ExitCode.HELD
