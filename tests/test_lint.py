from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delta_contracts.cli import app
from delta_contracts.contract.lint import lint, lint_many
from delta_contracts.contract.load import load_contract
from tests.builders import MINIMAL, write

runner = CliRunner()


def findings(text: str, tmp_path: Path) -> list[str]:
    loaded = load_contract(write(tmp_path, "c.yaml", text))
    return [str(p).replace(str(tmp_path) + "/", "") for p in lint(loaded)]


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_minimal_contract_is_clean(tmp_path: Path) -> None:
    assert findings(MINIMAL, tmp_path) == []


def test_examples_are_clean() -> None:
    code, out = cli("lint", str(Path(__file__).resolve().parents[1] / "contracts"))
    assert code == 0, out
    assert "all clean" in out


# The four acceptance cases: one located message each, exit 2 (unusable) or 1 (finding).
@pytest.mark.parametrize(
    ("old", "new", "code", "expected"),
    [
        (
            "    nullable: false",
            "    nulable: false",
            2,
            "c.yaml:8:5: columns[0].nulable: unknown field 'nulable' (did you mean 'nullable'?)",
        ),
        (
            "type: decimal(12,2)",
            "type: decimal(40,2)",
            1,
            "c.yaml:10:11: columns[1].type: invalid type 'decimal(40,2)': "
            "decimal precision 40 is out of range 1..38",
        ),
        (
            "  - name: amount",
            "  - name: ID",
            1,
            "c.yaml:9:11: columns[1].name: duplicate column 'ID': "
            "Delta column names are case-insensitive and columns[0] is 'order_id'",
        ),
        (
            "owner: {team: commerce}",
            "owner: {team: commerce",
            2,
            "c.yaml:5:8: YAML syntax error: did not find expected ',' or '}'",
        ),
    ],
)
def test_acceptance_cases(tmp_path: Path, old: str, new: str, code: int, expected: str) -> None:
    text = MINIMAL.replace(old, new)
    if "name: ID" in new:
        text = text.replace("name: order_id", "name: id").replace(
            "'order_id'", "'id'"
        )  # make the two names collide case-insensitively
        expected = expected.replace("order_id", "id")
    path = write(tmp_path, "c.yaml", text)
    result = runner.invoke(app, ["lint", str(path)])
    lines = [line for line in result.output.splitlines() if ".yaml:" in line]
    assert result.exit_code == code
    assert len(lines) == 1, result.output
    assert lines[0].replace(str(tmp_path) + "/", "").startswith(expected)
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (
            ("checks: {min: 0}", "checks: {enum: [1, '2']}"),
            "enum value '2' is not of the column's type decimal(12,2): use numbers",
        ),
        (("checks: {min: 0}", "checks: {min: 5, max: 1}"), "min 5 is greater than max 1"),
        (
            ("type: decimal(12,2)\n    checks: {min: 0}", "type: string\n    checks: {regex: '[unclosed'}"),
            "regex does not compile",
        ),
        (
            ("checks: {min: 0}", "checks: {min: 0}\n    renamed_from: order_id"),
            "names a column that still exists",
        ),
        (("type: bigint", "type: bigint\n    checks: {regex: '^a'}"), "regex on a column of type bigint"),
        (("type: decimal(12,2)", "type: map<string,int>"), "min on a column of type map<string,int>"),
        (("name: amount", "name: 'amount x'"), "which Delta stores only with column mapping"),
        (("type: bigint", "type: bigint\n    default: abc"), "default 'abc' does not fit type bigint"),
    ],
)
def test_column_findings(tmp_path: Path, mutation: tuple[str, str], message: str) -> None:
    (finding,) = findings(MINIMAL.replace(*mutation), tmp_path)
    assert message in finding


def test_every_rule_is_typed_against_its_column_and_all_findings_come_in_one_run(tmp_path: Path) -> None:
    columns = """\
  - {name: ts, type: timestamp, checks: {min: 0}}
  - {name: label, type: string, checks: {min: 0, enum: [1, a]}}
  - {name: qty, type: int, checks: {enum: [1, 2.5, x], regex: '^1'}}
  - {name: day, type: date, checks: {min: 2024-01-01T10:00:00, max: '5'}}
  - {name: flag, type: boolean, checks: {max: 1}}
"""
    found = findings(MINIMAL.replace("columns:\n", "columns:\n" + columns), tmp_path)
    messages = sorted(f.split(": ", 2)[1] + ": " + f.split(": ", 2)[2] for f in found)
    assert messages == sorted(
        [
            "columns[0].checks.min: min 0 is not a literal of type timestamp: use timestamps "
            "(2024-01-31 10:00:00) or dates",
            "columns[1].checks.min: min on a column of type string: min/max apply to numbers, dates and "
            "timestamps",
            "columns[1].checks.enum[0]: enum value 1 is not of the column's type string: use strings",
            "columns[2].checks.enum[1]: enum value 2.5 is not of the column's type int: use integers",
            "columns[2].checks.enum[2]: enum value 'x' is not of the column's type int: use integers",
            "columns[2].checks.regex: regex on a column of type int",
            "columns[3].checks.min: min datetime.datetime(2024, 1, 1, 10, 0) is not a literal of type date: "
            "use dates (2024-01-31)",
            "columns[3].checks.max: max '5' is not a literal of type date: use dates (2024-01-31)",
            "columns[4].checks.max: max on a column of type boolean: min/max apply to numbers, dates and "
            "timestamps",
        ]
    ), found


def test_bounds_of_the_column_type_are_clean(tmp_path: Path) -> None:
    columns = """\
  - {name: ts, type: timestamp, checks: {min: 2024-01-01, max: '2030-01-01 00:00:00'}}
  - {name: day, type: date, checks: {min: 2024-01-01, max: 2030-12-31}}
  - {name: qty, type: int, checks: {enum: [1, 2, 3], min: 1, max: 3}}
  - {name: ratio, type: double, checks: {min: 0, max: 0.5}}
"""
    assert findings(MINIMAL.replace("columns:\n", "columns:\n" + columns), tmp_path) == []
    later = columns.replace("max: 2030-12-31", "max: 2023-12-31")
    (finding,) = findings(MINIMAL.replace("columns:\n", "columns:\n" + later), tmp_path)
    assert "min 2024-01-01 is greater than max 2023-12-31" in finding


def test_booleans_are_booleans(tmp_path: Path) -> None:
    from delta_contracts.contract.errors import ContractError

    text = MINIMAL.replace("nullable: false", 'nullable: "no"')
    with pytest.raises(ContractError) as raised:
        load_contract(write(tmp_path, "c.yaml", text))
    (problem,) = raised.value.problems
    assert "columns[0].nullable" in str(problem) and "boolean" in str(problem)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("constraints:\n  - {name: c1, expression: 'amount >'}\n", "not a valid Spark SQL expression"),
        ("constraints:\n  - {name: c1, expression: 'amount + 1'}\n", "is not a boolean expression"),
        ("constraints:\n  - {name: c1, expression: 'amount > 0; DROP TABLE x'}\n", "exactly one expression"),
        ("constraints:\n  - {name: c1, expression: 'nope > 0'}\n", "'nope' is not a column"),
        ("constraints:\n  - {name: amount_min, expression: 'amount > 0'}\n", "is used twice"),
        ("table: {partitioned_by: [order_date]}\n", "'order_date' is not a column"),
        ("table: {properties: {delta_contracts.version: '1'}}\n", "set by the toolkit"),
        ("quality: {freshness: {column: ts, max_age: PT1H}}\n", "'ts' is not a column"),
        ("quality: {unique: [[order_id, nope]]}\n", "'nope' is not a column"),
    ],
)
def test_table_findings(tmp_path: Path, extra: str, message: str) -> None:
    (finding,) = findings(MINIMAL + extra, tmp_path)
    assert message in finding


def test_valid_constraint_passes(tmp_path: Path) -> None:
    extra = 'constraints:\n  - {name: c1, expression: "amount > 0 OR order_id IN (1, 2)"}\n'
    assert findings(MINIMAL + extra, tmp_path) == []


def test_hostile_names_pass_with_column_mapping(tmp_path: Path) -> None:
    text = MINIMAL.replace("name: amount", 'name: "a`b (c, d)=列 🚀"') + (
        "table: {properties: {delta.columnMapping.mode: name}}\n"
    )
    assert findings(text, tmp_path) == []


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a--b", "'--'"),
        ("a/*b", "'/*'"),
        ("new\\nline", "'\\n'"),
        ("it's", '"\'"'),
        ('say \\"hi\\"', "'\"'"),
        ("semi;colon", "';'"),
        ("back\\\\slash", "'\\\\'"),
        ("${env:HOME}", "'${'"),
    ],
)
def test_names_that_would_break_the_sql_file_are_refused(tmp_path: Path, name: str, shown: str) -> None:
    """`spark-sql -f` splits the migration's file without knowing back-quotes: such names end statements or
    open comments and strings there (tests/test_safe_names.py runs Spark's splitter on accepted names)."""
    text = MINIMAL.replace("name: amount", f'name: "{name}"') + (
        "table: {properties: {delta.columnMapping.mode: name}}\n"
        f'constraints:\n  - {{name: "{name}", expression: "order_id > 0"}}\n'
    )
    found = findings(text, tmp_path)
    assert [f.split(": ")[1] for f in found] == ["columns[1].name", "constraints[0].name"], found
    assert all("cannot be written into a migration's .sql file: it contains " + shown in f for f in found)


@pytest.mark.parametrize(
    ("table_id", "message"),
    [
        ("/tmp/x/OUTSIDE.x", "'/tmp/x/OUTSIDE.x' is not a table id"),
        ("sales/../../x.y", "is not a table id"),
        ("t.名前", "'t.名前' is not a table id"),
        ("t.x/y", "is not a table id"),
        ("t.1d", "is not a table id"),
        ("t.a-b", "is not a table id"),
        ("s." + "a" * 300, "table id is 302 characters long: at most 160"),
    ],
)
def test_ids_are_spark_identifiers_not_paths(tmp_path: Path, table_id: str, message: str) -> None:
    code, output = cli("lint", str(write(tmp_path, "c.yaml", MINIMAL.replace("sales.orders", table_id))))
    assert code == 2 and message in output and "Traceback" not in output, output


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    a = load_contract(write(tmp_path, "a.yaml", MINIMAL))
    b = load_contract(write(tmp_path, "b.yaml", MINIMAL.replace("sales.orders", "SALES.orders")))
    (problem,) = lint_many([a, b])
    assert problem.location.path.endswith("b.yaml") and "also declared in" in problem.message


def test_json_format_and_exit_codes(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", MINIMAL)
    code, out = cli("lint", "--format", "json", str(tmp_path))
    assert code == 0 and json.loads(out)["problems"] == []
    write(tmp_path, "bad.yaml", MINIMAL.replace("checks: {min: 0}", "checks: {min: 2, max: 1}"))
    code, out = cli("lint", "--format", "json", str(tmp_path))
    payload = json.loads(out)
    assert code == 1
    assert payload["problems"][0]["code"] == "DC-L004" and payload["problems"][0]["line"] == 11


def test_missing_path_is_usage_error(tmp_path: Path) -> None:
    code, out = cli("lint", str(tmp_path / "nope"))
    assert code == 2 and "no such file" in out


def test_schema_command_prints_the_committed_schema() -> None:
    code, out = cli("schema")
    assert code == 0
    committed = Path(__file__).resolve().parents[1] / "schema" / "contract.schema.json"
    assert json.loads(out) == json.loads(committed.read_text())
    assert "columns" in json.loads(out)["properties"]


def test_broken_project_file_is_reported_once(tmp_path: Path) -> None:
    write(tmp_path, "contracts.yml", "defaults:\n  evolution: {policy: sometimes}\n")
    write(tmp_path, "a.yaml", MINIMAL)
    write(tmp_path, "b.yaml", MINIMAL.replace("sales.orders", "sales.other"))
    code, out = cli("lint", str(tmp_path))
    lines = [line for line in out.splitlines() if "contracts.yml:" in line]
    assert code == 2
    assert len(lines) == 1 and "evolution.policy" in lines[0]


def test_first_line_of_any_error_message() -> None:
    from delta_contracts.contract.errors import first_line

    assert first_line(ValueError("")) == "ValueError"
    assert first_line(ValueError("\n  \nreal reason\nmore")) == "real reason"


BROKEN_THREE_WAYS = """\
apiVersion: delta-contracts/v1
id: s.t
version: 1.0.0
owner: {team: x}
columns:
  - {name: a, type: bigint, nullable: maybe}
  - {name: b, type: strng}
  - {name: c, type: string, checks: {min: 1}}
"""


def test_one_run_reports_every_problem_of_a_file(tmp_path: Path) -> None:
    """A schema error (a non-boolean `nullable`) no longer hides the bad type and the rule on the wrong type
    in the same file; the summary counts them one way."""
    path = write(tmp_path, "t.yaml", BROKEN_THREE_WAYS)
    code, out = cli("lint", str(path))
    assert code == 2, out
    located = [line.split(": ", 1)[0].rsplit(":", 2)[-2] for line in out.splitlines() if "t.yaml:" in line]
    assert located == ["6", "7", "8"], out
    assert (
        "columns[0].nullable" in out
        and "invalid type 'strng'" in out
        and "min on a column of type string" in out
    )
    assert (
        out.splitlines()[-1]
        == "1 contract(s) checked: 3 problem(s), 1 of them make a contract unusable (exit 2)"
    )


def test_findings_alone_are_counted_the_same_way(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", BROKEN_THREE_WAYS.replace("nullable: maybe", "nullable: true"))
    code, out = cli("lint", str(path))
    assert code == 1, out
    assert out.splitlines()[-1] == "1 contract(s) checked: 2 problem(s)"


def test_a_yaml_boolean_in_an_enum_is_named_as_yaml_writes_it(tmp_path: Path) -> None:
    text = MINIMAL.replace("    type: bigint\n", "    type: string\n    checks: {enum: [yes, maybe]}\n", 1)
    assert text != MINIMAL
    (message,) = [f for f in findings(text, tmp_path) if "enum value" in f]
    assert "enum value true is not of the column's type string" in message
    assert "YAML reads yes, no, on, off, true and false unquoted as booleans: quote it" in message


def test_schema_writes_the_file_the_documented_schema_comment_points_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38 item 13: a user's repository has no `schema/` folder. The docs say to write the schema with
    `schema -o contracts/contract.schema.json`, and the `$schema` comment they show for a contract at
    `contracts/<schema>/<table>.yaml` resolves to that very file."""
    import re

    repo = Path(__file__).resolve().parents[1]
    committed = json.loads((repo / "schema" / "contract.schema.json").read_text())
    monkeypatch.chdir(tmp_path)
    for page in ("README.md", "docs/contract-format.md"):
        text = (repo / page).read_text()
        (written,) = set(re.findall(r"delta-contracts schema -o (\S+?)`", text))
        (comment,) = set(re.findall(r"yaml-language-server: \$schema=(\S+)", text))
        code, out = cli("schema", "-o", written)
        assert code == 0 and written in out, out
        assert json.loads((tmp_path / written).read_text()) == committed
        contract = tmp_path / "contracts" / "iot" / "sensor_readings.yaml"
        assert (contract.parent / comment).resolve() == (tmp_path / written).resolve(), page
