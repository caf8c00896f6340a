"""The PR comment says what the table will become: every change of the recipe matrix that `plan` serves as a
versioned table (its warnings send producers to another table) is said so by `diff` in text, JSON and
Markdown — the name a view, producers writing to `<table>__vN` — and no other change is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.model import Contract
from delta_contracts.plan.planner import PlanError, plan
from delta_contracts.target import Target
from tests.recipes import RECIPES, pair

runner = CliRunner()
# `make test` runs one case of each kind (the name becomes a view, the view moves, neither); the rest of the
# matrix is the exhaustive tier's.
_SAMPLE = {("narrow_type", "in_place"), ("drop_column", "versioned"), ("add_nullable_column", "in_place")}
CASES = [
    pytest.param(recipe, versioning, marks=() if (recipe, versioning) in _SAMPLE else pytest.mark.exhaustive)
    for recipe in RECIPES
    for versioning in ("in_place", "versioned")
]
_PRODUCERS = re.compile(r"producers must write to (\S+?)[;,]? ")


def _write(path: Path, contract: Contract) -> Path:
    data = contract.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _producers_table(old: Contract, new: Contract) -> str | None:
    """Where plan's warnings send producers after the cutover (None: they keep writing where they did)."""
    try:
        migration, _ = plan(old, new, Target.DELTA_4)
    except PlanError:
        return None
    for warning in migration.warnings:
        found = _PRODUCERS.search(warning + " ")
        if found:
            return found.group(1)
    return None


@pytest.mark.parametrize(("recipe", "versioning"), CASES)
def test_diff_says_when_the_table_is_served_as_a_versioned_table(
    recipe: str, versioning: str, tmp_path: Path
) -> None:
    old, new = pair(recipe, versioning)
    producers = _producers_table(old, new)
    old_file, new_file = _write(tmp_path / "old.yaml", old), _write(tmp_path / "new.yaml", new)
    outputs = {}
    for fmt in ("text", "json", "markdown"):
        result = runner.invoke(
            app,
            ["diff", str(old_file), str(new_file), "--format", fmt],
        )
        outputs[fmt] = result.stdout
    becomes = json.loads(outputs["json"])["contracts"][0]["table_becomes"]
    if producers is None:
        assert becomes == []
        assert "table: served as" not in outputs["text"]
        assert "What the table becomes" not in outputs["markdown"]
        return
    assert len(becomes) == 1
    (said,) = becomes
    assert f"producers must write to {producers}" in said
    assert "view" in said and "Readers keep reading payments.transactions" in said
    assert f"  table: {said}" in outputs["text"].splitlines()
    markdown = outputs["markdown"]
    assert "What the table becomes:" in markdown and f"- {said}" in markdown.splitlines()
