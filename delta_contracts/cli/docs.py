"""The generated parts of docs/: field tables from the contract model, the change codes, the commands.

Each generated block sits between markers in a Markdown file; `regenerate` rewrites them and a test fails
when one is out of date. Run `python -m delta_contracts.cli.docs` after changing the model, a change code or
a command.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.core import TyperArgument, TyperGroup

BEGIN = "<!-- BEGIN GENERATED: {name} (python -m delta_contracts.cli.docs) -->"
END = "<!-- END GENERATED: {name} -->"


def change_codes_table() -> str:
    from delta_contracts.diff.changes import CODES

    lines = ["| code | default class | change |", "| --- | --- | --- |"]
    lines += [f"| `{code}` | {cls.value} | {title} |" for code, (cls, title) in CODES.items()]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _commands(group: TyperGroup, prefix: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        path = f"{prefix} {name}"
        if isinstance(command, TyperGroup):
            found.extend(_commands(command, path))
        else:
            found.append((path, command))
    return found


def _param_row(param: Any) -> str:
    if isinstance(param, TyperArgument):
        name = f"`{str(param.name).upper()}`" + ("…" if param.nargs == -1 else "")
        return f"| {name} | argument | {_cell(param.help or '')} |"
    flags = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    default = ""
    if param.default not in (None, False, (), []) and not param.is_flag:
        value = getattr(param.default, "value", param.default)
        default = f" (default `{value}`)"
    return f"| {flags} | option | {_cell(param.help or '')}{default} |"


def commands_reference() -> str:
    import typer

    from delta_contracts.cli import app

    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    sections: list[str] = []
    for path, command in _commands(root, "delta-contracts"):
        summary = (command.help or "").strip()
        params = [p for p in command.params if p.name != "help"]
        lines = [f"### `{path}`", "", summary, ""]
        if params:
            lines += ["| parameter | kind | meaning |", "| --- | --- | --- |"]
            lines += [_param_row(p) for p in params]
        sections.append("\n".join(lines).rstrip())
    return "\n\n".join(sections)


def generated_blocks() -> dict[str, tuple[str, Callable[[], str]]]:
    from delta_contracts.contract import reference

    return {
        "contract-fields": ("contract-format.md", reference.contract_fields_table),
        "project-fields": ("contract-format.md", reference.project_fields_table),
        "change-codes": ("changes.md", change_codes_table),
        "commands": ("commands.md", commands_reference),
    }


def fill(text: str, name: str, body: str) -> str:
    """`text` with the generated block `name` replaced by `body`; ValueError when the markers are missing."""
    begin, end = BEGIN.format(name=name), END.format(name=name)
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"no generated block '{name}' (markers {begin} … {end})")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text, count=1)


def rendered(docs: Path) -> dict[Path, str]:
    """Every docs file holding a generated block, as it should read now."""
    texts: dict[Path, str] = {}
    for name, (file, render) in generated_blocks().items():
        path = docs / file
        current = texts.get(path, path.read_text(encoding="utf-8"))
        texts[path] = fill(current, name, render())
    return texts


def regenerate(docs: Path) -> list[Path]:
    """Rewrite every generated block under `docs`; return the files that changed."""
    changed = []
    for path, text in rendered(docs).items():
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":
    for written in regenerate(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs")):
        print(f"regenerated {written}")
