"""The notebooks run: their code cells are executed in order, as a kernel would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_notebook_runs(notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(notebook.parent)
    cells = json.loads(notebook.read_text())["cells"]
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{notebook.name}", "exec"), namespace)
    # the notebook asserts its own expectations; here: it really created the table it shows
    result = namespace.get("result")
    assert result is not None and getattr(result, "created", False)
