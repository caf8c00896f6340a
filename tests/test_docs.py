"""The documentation ships with the project: links stay inside it, generated parts stay current."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import yaml
from pydantic import BaseModel, Field

from delta_contracts.cli.docs import fill, generated_blocks, rendered
from delta_contracts.contract import reference
from delta_contracts.contract.errors import ContractError
from delta_contracts.contract.load import LoadedContract, load_contract, load_project
from delta_contracts.contract.model import Contract
from delta_contracts.contract.project import PROJECT_FILE

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
# [text](target) and [text]: target; images too. Code spans and fences are removed first.
_INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_HTML = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")


def _prose(text: str) -> str:
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def links(page: Path) -> list[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    return [*_INLINE.findall(text), *_REFERENCE.findall(text), *_HTML.findall(text)]


def outside_repository(page: Path, target: str) -> str | None:
    """Why the link leaves the repository or leads nowhere, or None when it resolves to a file in it."""
    parsed = urlparse(target)
    if parsed.scheme or target.startswith("//"):
        return "points to another site"
    if not parsed.path:
        return None  # a fragment of the same page
    resolved = (page.parent / unquote(parsed.path)).resolve()
    if not resolved.is_relative_to(ROOT):
        return "points outside the repository"
    if not resolved.exists():
        return "points to a file that does not exist"
    return None


def test_every_page_is_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/README.md", "docs/contract-format.md", "docs/changes.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_links_stay_inside_the_repository(page: Path) -> None:
    bad = [f"{target}: {why}" for target in links(page) if (why := outside_repository(page, target))]
    assert not bad, f"{page.relative_to(ROOT)}:\n" + "\n".join(bad)


def test_the_link_checker_catches_what_it_must(tmp_path: Path) -> None:
    page = DOCS / "probe.md"
    assert outside_repository(page, "../../shared/DESIGN.md") == "points outside the repository"
    assert outside_repository(page, "https://example.com/x") == "points to another site"
    assert outside_repository(page, "missing.md") == "points to a file that does not exist"
    assert outside_repository(page, "changes.md#what-counts-as-a-widening") is None
    probe = tmp_path / "p.md"
    probe.write_text("[a](x.md) `[b](y.md)`\n[c]: z.md\n```\n[d](w.md)\n```\n", encoding="utf-8")
    assert links(probe) == ["x.md", "z.md"]


def test_every_model_field_is_documented() -> None:
    assert reference.undocumented_fields() == [], (
        "document these fields in delta_contracts/contract/reference.py FIELD_DOCS"
    )
    assert reference.stale_docs() == [], "FIELD_DOCS names fields the models no longer have"


def test_every_model_field_has_an_example() -> None:
    assert reference.fields_without_example() == [], (
        "give these fields `Field(examples=[…])` in the model or an entry in reference.FIELD_EXAMPLES"
    )
    assert reference.stale_examples() == [], (
        "FIELD_EXAMPLES names fields the models no longer have or that declare their own examples"
    )


def test_the_example_checker_catches_a_missing_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(reference.FIELD_EXAMPLES, "columns[].renamed_from")
    assert reference.fields_without_example() == ["columns[].renamed_from"]

    class Probe(BaseModel):
        shown: int = Field(default=0, examples=[3])
        bare: str | None = None

    assert reference.fields_without_example(reference.field_rows(Probe, "probe.")) == ["probe.bare"]


def test_the_example_checker_catches_stale_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(reference.FIELD_EXAMPLES, "columns[].colour", "red")
    # The model's own example is what the reference shows; a second one here would be dead text.
    monkeypatch.setitem(reference.FIELD_EXAMPLES, "columns[].name", "amount")
    assert reference.stale_examples() == ["columns[].colour", "columns[].name"]


_ROWS = {row.path: row for row in reference.all_rows()}


def example_value(path: str) -> Any:
    """The field's example as a reader would copy it: the rendered snippet, parsed back as YAML."""
    snippet = reference.example_snippet(_ROWS[path])
    assert snippet is not None, path
    assert "`" not in snippet and "\n" not in snippet, snippet  # it sits in a one-line code span
    parsed = yaml.safe_load(snippet)
    key = path.rsplit(".", 1)[-1]
    assert isinstance(parsed, dict) and list(parsed) == [key], snippet
    return parsed[key]


def place(document: dict[str, Any], path: str, value: Any, namespace: str = "") -> None:
    """Put `value` at `path` (`columns[].checks.min`) in `document`. A mapping or list missing on the way
    is created from that field's own example; `[]` descends into the list's first item."""
    *between, leaf = path.removeprefix(namespace).split(".")
    here: Any = document
    walked = namespace
    for part in between:
        if part == reference.MAPPING_KEY:  # into the mapping's first entry, as its example made it
            here = next(iter(here.values()))
            walked += part + "."
            continue
        key = part.removesuffix("[]")
        walked += key
        if key not in here:
            here[key] = example_value(walked)
        here = here[key]
        if part.endswith("[]"):
            here = here[0]
            walked += "[]"
        walked += "."
    here[leaf] = value


# Fields whose example names what another field declares: `promote` lists environments.
_NEEDS = {"project.promote": ("project.environments",)}


def contract_with_example(path: str, folder: Path) -> LoadedContract:
    """A contract of only the required fields (their examples), with the example of `path` placed in it,
    or in the `contracts.yml` beside it for a `project.` path; loaded with the project's loader."""
    contract = {
        info.alias or name: example_value(info.alias or name)
        for name, info in Contract.model_fields.items()
        if info.is_required()
    }
    project: dict[str, Any] = {}
    if path.startswith("project."):
        for needed in _NEEDS.get(path, ()):
            place(project, needed, example_value(needed), "project.")
        place(project, path, example_value(path), "project.")
    else:
        place(contract, path, example_value(path))
    project_file = folder / PROJECT_FILE
    project_file.write_text(yaml.safe_dump(project, sort_keys=False), encoding="utf-8")
    contract_file = folder / "example.yaml"
    contract_file.write_text(yaml.safe_dump(contract, sort_keys=False), encoding="utf-8")
    return load_contract(contract_file, load_project(project_file))


@pytest.mark.parametrize("path", reference.all_field_paths())
def test_every_example_loads(path: str, tmp_path: Path) -> None:
    loaded = contract_with_example(path, tmp_path)
    assert loaded.contract.columns


def test_an_example_placed_where_it_says_is_what_loads(tmp_path: Path) -> None:
    regex = contract_with_example("columns[].checks.regex", tmp_path).contract.columns[0].checks.regex
    assert regex == "^[A-Z]{3}$"
    rule = contract_with_example("project.column_rules[].checks", tmp_path).contract.columns[0]
    assert rule.checks.min == 1  # the rule's `_id$` example matches the `columns` example's txn_id


@pytest.mark.parametrize(
    ("path", "bad", "message"),
    [
        ("columns[].nullable", "no", "columns[0].nullable"),
        ("table.versioning", "sideways", "table.versioning"),
        ("project.target", "delta-5", "target"),
        ("project.column_rules[].pii", "maybe", "column_rules[0].pii"),
    ],
)
def test_an_invalid_example_fails_to_load(
    path: str, bad: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(reference.FIELD_EXAMPLES, path, bad)
    with pytest.raises(ContractError) as caught:
        contract_with_example(path, tmp_path)
    assert any(p.field == message for p in caught.value.problems), caught.value.problems


def test_every_field_appears_in_the_format_reference() -> None:
    text = (DOCS / "contract-format.md").read_text(encoding="utf-8")
    for path in reference.all_field_paths():
        assert f"`{path.removeprefix('project.')}`" in text, path


def test_every_change_code_is_in_the_classification_table() -> None:
    from delta_contracts.diff.changes import CODES

    text = (DOCS / "changes.md").read_text(encoding="utf-8")
    for code, (change_class, _) in CODES.items():
        assert f"| `{code}` | {change_class.value} |" in text, code


def test_every_command_is_in_the_commands_reference() -> None:
    import typer

    from delta_contracts.cli import app

    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    for name in getattr(root, "commands", {}):
        assert f"### `delta-contracts {name}" in text, name


@pytest.mark.parametrize("name", sorted(generated_blocks()))
def test_generated_blocks_are_current(name: str) -> None:
    file = generated_blocks()[name][0]
    current = (DOCS / file).read_text(encoding="utf-8")
    assert rendered(DOCS)[DOCS / file] == current, (
        f"docs/{file} is out of date: run `python -m delta_contracts.cli.docs`"
    )
    assert f"GENERATED: {name} " in current


def test_fill_refuses_a_missing_block() -> None:
    with pytest.raises(ValueError, match="no generated block 'x'"):
        fill("text", "x", "body")


def test_every_command_is_in_the_readme_command_table() -> None:
    """Issue 38 item 13: `discard` was missing. Each command of the CLI starts a row of the README's table."""
    from delta_contracts.cli import COMMANDS

    table = (ROOT / "README.md").read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    named = {cell.strip().strip("`").split()[0] for row in first_cells for cell in row.split(", ")}
    assert set(COMMANDS) - named == set()


def test_the_walkthrough_diffs_a_pull_request_against_its_base_branch() -> None:
    """Issue 38 item 13: a pull request's `diff` compares with the branch it goes into, not with HEAD (which
    on a committed branch is the change itself: nothing to compare)."""
    text = (DOCS / "walkthrough.md").read_text()
    assert "$ delta-contracts diff --base main" in text
    assert "$ delta-contracts diff --base HEAD" not in text
