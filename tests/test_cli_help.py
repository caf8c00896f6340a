"""`--help` (issue 47 item 7): a command's summary is its docstring's first sentence, on one line wherever
the console is wide enough; the docstring's source line breaks are not the reader's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from delta_contracts.cli import COMMANDS, help_texts

ROOT = Path(__file__).resolve().parent.parent


def test_summaries_are_one_sentence_and_help_has_no_source_line_breaks() -> None:
    doc = """Classify contract changes, check the declared version bump and the policy; with --readers,
    name who reads each object a change breaks. Exit 1 on a violation.

    A second paragraph."""
    summary, text = help_texts(doc)
    assert summary == (
        "Classify contract changes, check the declared version bump and the policy; with --readers, "
        "name who reads each object a change breaks."
    )
    assert text.split("\n\n") == [f"{summary} Exit 1 on a violation.", "A second paragraph."]


def test_the_command_list_breaks_no_summary_on_a_wide_console() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    out = subprocess.run(
        [sys.executable, "-m", "delta_contracts", "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = [line.strip("│ ").split(None, 1) for line in out.splitlines() if line.startswith("│ ")]
    by_name = {parts[0]: parts[1].strip() for parts in listed if len(parts) == 2}
    for name in ("diff", "init", "status", "apply", "drift"):
        assert by_name[name].endswith("."), (name, by_name[name])
    continued = [line for line in out.splitlines() if line.startswith("│" + " " * 12)]
    assert continued == [], continued
    assert set(COMMANDS) <= set(by_name) | {"import", "export", "telemetry"}
