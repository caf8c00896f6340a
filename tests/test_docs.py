"""The documentation ships with the project: links stay inside it, generated parts stay current."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from delta_contracts.cli.docs import fill, generated_blocks, rendered
from delta_contracts.contract import reference

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
