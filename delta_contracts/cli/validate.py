"""`validate`: every contract's rules checked against its live table; text, JSON, Markdown or JUnit XML."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from delta_contracts.cli.common import EXIT_FINDINGS, EXIT_OK, EnvOption, PathsArgument
from delta_contracts.cli.tables import EngineOption, UrlOption, WarehouseOption, _open
from delta_contracts.contract.errors import plain

if TYPE_CHECKING:
    from delta_contracts.quality.validate import TableReport


class ValidateFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    JUNIT = "junit"


ValidateFormatOption = Annotated[
    ValidateFormat, typer.Option("--format", "-f", help="text, json, markdown or junit (XML for CI).")
]
SamplesOption = Annotated[int, typer.Option("--samples", min=0, help="Sample rows shown per failing rule.")]


def validate_command(
    paths: PathsArgument = None,
    engine: EngineOption = None,
    url: UrlOption = None,
    warehouse: WarehouseOption = None,
    env: EnvOption = None,
    fmt: ValidateFormatOption = ValidateFormat.TEXT,
    samples: SamplesOption = 5,
) -> None:
    """Check live data against each contract in one pass per table. Exit 0 all pass, 1 a rule fails."""
    from delta_contracts.cli.common import load_valid_contracts, migrations_root
    from delta_contracts.quality.locate import physical_table
    from delta_contracts.quality.validate import validate_table

    contracts = load_valid_contracts(paths, env)
    migrations = migrations_root(contracts)
    reports: list[TableReport] = []
    with _open(contracts, engine, url, warehouse) as live:
        for item in contracts.contracts:
            table = contracts.names.physical(physical_table(item.contract, migrations))
            print(f"validating {item.contract.id} ({table})", file=sys.stderr)
            reports.append(validate_table(live, item.contract, table, samples=samples))
    render = {
        ValidateFormat.JSON: _json,
        ValidateFormat.MARKDOWN: _markdown,
        ValidateFormat.JUNIT: junit_xml,
    }.get(fmt, _text)
    print(render(reports))
    raise typer.Exit(EXIT_OK if all(r.passed for r in reports) else EXIT_FINDINGS)


def _json(reports: list[TableReport]) -> str:
    return json.dumps({"tables": [r.to_json() for r in reports]}, indent=2)


def _text(reports: list[TableReport]) -> str:
    lines = []
    for report in reports:
        head = f"{report.contract} {report.version} ({report.table}"
        if report.error:
            lines.append(f"{head}): {report.error}")
            continue
        failed = len(report.failed)
        state = f"{failed} of {len(report.results)} rule(s) fail" if failed else "all rules pass"
        lines.append(f"{head}, {report.rows} rows): {state}")
        for result in report.results:
            mark = "✓" if result.passed else "✗"
            lines.append(f"  {mark} {result.name}" + (f": {result.detail}" if result.detail else ""))
            lines.extend(f"      {plain(row)}" for row in result.samples)
    return "\n".join(lines)


def _markdown(reports: list[TableReport]) -> str:
    lines = ["| table | rule | result | failing | detail |", "| --- | --- | --- | --- | --- |"]
    for report in reports:
        if report.error:
            lines.append(f"| `{report.table}` | (table) | fail | | {_cell(report.error)} |")
        for r in report.results:
            verdict = "pass" if r.passed else "**fail**"
            lines.append(f"| `{report.table}` | `{r.name}` | {verdict} | {r.failing} | {_cell(r.detail)} |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def junit_xml(reports: list[TableReport]) -> str:
    """One <testsuite> per table, one <testcase> per rule, so CI shows every rule as a test."""
    from xml.etree import ElementTree as ET

    root = ET.Element("testsuites", name="delta-contracts validate")
    for report in reports:
        results = report.results
        failures = len(report.failed) + (1 if report.error else 0)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=report.contract,
            tests=str(len(results) + (1 if report.error else 0)),
            failures=str(failures),
            errors="0",
        )
        ET.SubElement(
            ET.SubElement(suite, "properties"),
            "property",
            name="table",
            value=report.table,
        )
        if report.error:
            case = ET.SubElement(suite, "testcase", classname=report.contract, name="table exists")
            ET.SubElement(case, "failure", message=report.error)
        for result in results:
            case = ET.SubElement(suite, "testcase", classname=report.contract, name=result.name)
            if not result.passed:
                failure = ET.SubElement(case, "failure", message=result.detail, type=result.kind)
                if result.samples:
                    failure.text = json.dumps(result.to_json()["samples"])
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
