"""Every notebook runs top to bottom in a real kernel, on the default engine, with no edits (nbclient)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
pytestmark = pytest.mark.engine


def test_the_notebooks_are_found() -> None:
    names = {n.name for n in NOTEBOOKS}
    assert names >= {
        "create_tables.ipynb",
        "migration_walkthrough.ipynb",
        "telemetry_report.ipynb",
        "pipeline_quality.ipynb",
    }


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_notebook_runs(notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel is a separate process: it imports this checkout's package first, as the tests do.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    )
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(notebook.parent)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, on the first cell that fails
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count is not None for cell in code)
    errors = [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert errors == []
