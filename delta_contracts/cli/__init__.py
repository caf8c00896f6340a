"""The `delta-contracts` command line: parses arguments, calls the core, prints. Nothing else.

Heavy modules (pydantic models, sqlglot, pyspark) are imported inside the commands so that `--help`
answers at once. The command modules themselves are imported only when needed: `delta-contracts diff A B`
builds an application holding `diff` alone, so it neither imports the engine commands' modules nor has
typer read every command's signature (`bench/bench_startup.py`). `app`, the application with every
command, is built on first use.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import os
import re
import sys
from importlib import import_module
from typing import Annotated, NoReturn

import typer

from delta_contracts.cli.errors import ErrorsToExitCodes

# Command or sub-application name -> (module, attribute), in the order `--help` lists them. A function is
# registered as a command, a typer.Typer as a group of commands.
COMMANDS: dict[str, tuple[str, str]] = {
    "import": ("delta_contracts.cli.interchange", "import_app"),
    "export": ("delta_contracts.cli.interchange", "export_app"),
    "diff": ("delta_contracts.cli.diff", "diff_command"),
    "init": ("delta_contracts.cli.adopt", "init_command"),
    "plan": ("delta_contracts.cli.plan", "plan_command"),
    "create": ("delta_contracts.cli.tables", "create_command"),
    "drift": ("delta_contracts.cli.tables", "drift_command"),
    "status": ("delta_contracts.cli.tables", "status_command"),
    "apply": ("delta_contracts.cli.apply", "apply_command"),
    "history": ("delta_contracts.cli.apply", "history_command"),
    "rehash": ("delta_contracts.cli.apply", "rehash_command"),
    "discard": ("delta_contracts.cli.apply", "discard_command"),
    "validate": ("delta_contracts.cli.validate", "validate_command"),
    "telemetry": ("delta_contracts.cli.telemetry", "telemetry_app"),
    "lint": ("delta_contracts.cli.lint", "lint_command"),
    "schema": ("delta_contracts.cli.lint", "schema_command"),
    "site": ("delta_contracts.cli.site", "site_command"),
    "demo": ("delta_contracts.cli.demo", "demo_command"),
    "jars": ("delta_contracts.cli.jars", "jars_command"),
    "engine": ("delta_contracts.cli.engine", "engine_app"),
}


def _show_version(wanted: bool) -> None:
    if not wanted:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        print(f"delta-contracts {version('delta-contracts')}")
    except PackageNotFoundError:  # imported from a source folder that was never installed
        print("delta-contracts: not installed (no package metadata)", file=sys.stderr)
        raise typer.Exit(2) from None
    raise typer.Exit(0)


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the installed version and exit."
        ),
    ] = False,
) -> None:
    # A callback keeps the application a group even when it holds a single command, so that
    # `delta-contracts diff A B` parses the same with one command registered as with all of them.
    pass


def build_app(*names: str) -> typer.Typer:
    """The application with the named commands (every command when none is named)."""
    application = typer.Typer(
        name="delta-contracts",
        cls=ErrorsToExitCodes,
        help="Delta Lake table governance from YAML data contracts.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    application.callback()(_root)
    for name, (module, attribute) in COMMANDS.items():
        if names and name not in names:
            continue
        target = getattr(import_module(module), attribute)
        if isinstance(target, typer.Typer):
            application.add_typer(target, name=name)
        else:
            summary, text = help_texts(target.__doc__ or "")
            application.command(name=name, help=text, short_help=summary)(target)
    return application


def help_texts(docstring: str) -> tuple[str, str]:
    """A command's one-sentence summary (the command list) and its help, from its docstring: the docstring's
    line breaks are where its source wraps, not the reader's terminal, so each paragraph becomes one line
    for the help to wrap at the terminal's width (and not at all where the output is no terminal)."""
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(docstring).split("\n\n") if p.strip()]
    first = paragraphs[0] if paragraphs else ""
    summary = re.split(r"(?<=[.])\s+(?=[A-Z])", first, maxsplit=1)[0]
    return summary, "\n\n".join(paragraphs)


def __getattr__(name: str) -> typer.Typer:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    application = build_app()
    globals()["app"] = application
    return application


def main() -> None:
    from delta_contracts.errors import DeltaContractsError

    # Pydantic plugins observe an application's validation; the command line's models are its own, and
    # looking plugins up reads the entry points of every installed distribution (some 6 ms of `diff`'s
    # start-up). Set before any model is built; an explicit setting, even an empty one, wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    requested = sys.argv[1] if len(sys.argv) > 1 else ""
    application = build_app(requested) if requested in COMMANDS else build_app()
    try:
        application()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        exit_process(130)
    except DeltaContractsError as err:  # one raised outside any command: its one line and code, no traceback
        lines = str(err).strip().splitlines()
        print(f"error: {lines[0] if lines else type(err).__name__}", file=sys.stderr)
        exit_process(err.exit_code)
    except SystemExit as done:
        if done.code == 130:  # typer turns a KeyboardInterrupt into exit 130, silently
            print("interrupted", file=sys.stderr)
        exit_process(done.code)
    exit_process(0)


# Arrow's C++ thread pools (used by pyarrow and through it by delta-rs) can abort the interpreter while it
# finalizes modules ("terminate called without an active exception", exit 134) after a command has printed
# everything: apache/arrow#34314, delta-io/delta-rs#2184. A command whose work is done must not fail then.
_NATIVE_POOLS = ("pyarrow", "deltalake")


def exit_process(code: object = 0) -> NoReturn:
    """`sys.exit(code)`, except that once a native pool is loaded the interpreter's finalization is skipped.

    Registered exit functions still run and the standard streams are flushed first, so nothing the command
    printed or scheduled is lost; only module teardown (which has nothing left to do) is skipped.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    if not any(name in sys.modules for name in _NATIVE_POOLS):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be delivered
            stream.flush()
    os._exit(status)
