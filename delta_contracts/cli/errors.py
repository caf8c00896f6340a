"""The one place the command line turns an error into what the user reads and the status a command ends with.

Commands raise; they do not print errors. The application's group (`ErrorsToExitCodes`, installed by
`build_app`) catches every `DeltaContractsError` a command lets through, prints it with `report` and ends
with the error's own exit code, so that the codes are the errors' and nothing prints an error twice. It sits
in the group rather than in `main()` so that an application driven by typer's CliRunner ends the same way.

This module imports typer and `delta_contracts.errors` only: `--help` loads it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from delta_contracts.errors import DeltaContractsError, InputError

if TYPE_CHECKING:
    from typer._click import Context


class UsageError(InputError):
    """A bad option or argument, or input the command found unusable before anything ran. The message is
    what follows `error: `; each of `notes` is a line printed after it as it is (a hint, a detail)."""

    def __init__(self, message: str, *notes: str) -> None:
        super().__init__(message)
        for note in notes:
            self.add_note(note)


class EngineStartError(UsageError):
    """The chosen engine could not start (a JVM, jars, a server or a URL is missing), or could not read what
    the command needs through it."""


def report(err: DeltaContractsError) -> None:
    """Print an error as the user reads it, on stderr: `error: ` and its message, or, for an error that
    carries located problems (a broken contract), those problems one a line; then its notes."""
    problems = getattr(err, "problems", None)
    if problems:
        for problem in problems:
            print(str(problem), file=sys.stderr)
    else:
        print(f"error: {str(err) or type(err).__name__}", file=sys.stderr)
    for note in getattr(err, "__notes__", ()):
        print(note, file=sys.stderr)


class ErrorsToExitCodes(TyperGroup):
    """The application's group: a `DeltaContractsError` out of any command (or sub-command) is reported once,
    with no traceback, and ends the command with its exit code."""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except DeltaContractsError as err:
            report(err)
            raise typer.Exit(err.exit_code) from None
