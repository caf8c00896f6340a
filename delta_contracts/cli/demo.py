"""`demo`: the main job end to end on the example project (what `make demo` runs)."""

from __future__ import annotations

import typer


def demo_command() -> None:
    """The life of the example tables in a fresh warehouse/demo: apply every committed migration of
    sales.orders, the drops held at their gates and why, telemetry naming a reader, history, status, drift,
    then the drops forced with a recorded reason. Run it from the project's folder (contracts/ below it)."""
    from delta_contracts.demo import main

    raise typer.Exit(main())
