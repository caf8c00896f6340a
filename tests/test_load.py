from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from delta_contracts.contract.errors import ContractError
from delta_contracts.contract.load import contract_files, load_contract, parse_contract
from delta_contracts.contract.model import Versioning
from tests.builders import MINIMAL, write


def problems_of(text: str, tmp_path: Path) -> list[str]:
    path = write(tmp_path, "c.yaml", text)
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    return [str(p).replace(str(tmp_path) + "/", "") for p in caught.value.problems]


def test_minimal_contract_loads_with_defaults(tmp_path: Path) -> None:
    loaded = load_contract(write(tmp_path, "c.yaml", MINIMAL))
    c = loaded.contract
    assert c.id == "sales.orders"
    assert c.table.versioning is Versioning.IN_PLACE
    assert c.columns[1].checks.min == 0
    assert c.evolution.deprecation_window == "P30D"
    assert loaded.locate("columns", 1, "type").line == 10


def test_models_are_frozen(tmp_path: Path) -> None:
    c = load_contract(write(tmp_path, "c.yaml", MINIMAL)).contract
    with pytest.raises(Exception, match="frozen"):
        c.version = "2.0.0"  # type: ignore[misc]


def test_misspelled_key_is_one_located_error(tmp_path: Path) -> None:
    text = MINIMAL.replace("    nullable: false", "    nulable: false")
    assert problems_of(text, tmp_path) == [
        "c.yaml:8:5: columns[0].nulable: unknown field 'nulable' (did you mean 'nullable'?)"
    ]


def test_a_comma_in_a_flow_mapping_expression_hints_to_quote_it(tmp_path: Path) -> None:
    """Issue 47 item 7: `{…, default_expression: round(a, 2) / 60}` splits at the comma."""
    text = MINIMAL + "  - {name: per_hour, type: double, default_expression: round(amount, 2) / 60}\n"
    (problem,) = [p for p in problems_of(text, tmp_path) if "unknown field" in p]
    assert problem.startswith("c.yaml:12:"), problem
    assert problem.endswith(
        "unknown field '2) / 60' — a comma inside a flow mapping `{…}` ends the value before it: quote an "
        'expression that holds a comma (generated: "round(a, 2) / 60")'
    ), problem


def test_misspelled_required_key_is_reported_once(tmp_path: Path) -> None:
    text = MINIMAL.replace("columns:", "colums:")
    assert problems_of(text, tmp_path) == [
        "c.yaml:5:1: colums: unknown field 'colums' (did you mean 'columns'?)"
    ]


def test_broken_yaml_is_one_located_error(tmp_path: Path) -> None:
    text = MINIMAL.replace("owner: {team: commerce}", "owner: {team: commerce")
    (message,) = problems_of(text, tmp_path)
    assert message.startswith("c.yaml:5:")
    assert "YAML syntax error" in message


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    text = MINIMAL + "version: 2.0.0\n"
    assert problems_of(text, tmp_path) == [
        "c.yaml:12:1: version: duplicate key 'version' (the first is ignored)"
    ]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("version: 1.0.0", "version: 1.0", "c.yaml:3:10: version: '1.0' is not a semantic version"),
        ("id: sales.orders", "id: orders", "c.yaml:2:5: id: 'orders' is not a table id"),
        ("    nullable: false", "    nullable: maybe", "c.yaml:8:15: columns[0].nullable: Input should be"),
        ("owner: {team: commerce}", "owner: commerce", "c.yaml:4:8: owner: Input should be"),
    ],
)
def test_schema_violations_name_place_and_field(tmp_path: Path, old: str, new: str, expected: str) -> None:
    (message,) = problems_of(MINIMAL.replace(old, new), tmp_path)
    assert message.startswith(expected)


def test_missing_required_field_points_at_the_mapping(tmp_path: Path) -> None:
    text = MINIMAL.replace("owner: {team: commerce}\n", "")
    assert problems_of(text, tmp_path) == ["c.yaml:1:1: owner: missing required field 'owner'"]


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just a string\n", "a: &x [*x]\n"])
def test_non_contract_documents_are_located_errors(tmp_path: Path, text: str) -> None:
    (message,) = problems_of(text, tmp_path)
    assert message.startswith("c.yaml:1:")


def test_unreadable_file_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    assert "cannot read" in str(caught.value)


def test_project_defaults_fill_unset_fields_and_contract_wins(tmp_path: Path) -> None:
    write(
        tmp_path,
        "contracts.yml",
        """\
        defaults:
          owner: {team: platform, email: p@example.com}
          evolution: {policy: any, deprecation_window: P60D}
        column_rules:
          - match: "_id$"
            nullable: false
            tags: [key]
          - match: "^amount$"
            description: Money.
        """,
    )
    text = (
        MINIMAL.replace("owner: {team: commerce}\n", "evolution: {deprecation_window: P7D}\n")
        .replace("        nullable: false\n", "")
        .replace("    checks: {min: 0}", "    checks: {min: 0}\n    description: Own words.")
    )
    c = load_contract(write(tmp_path, "sales/orders.yaml", text)).contract
    assert c.owner.team == "platform"
    assert c.evolution.policy == "any"
    assert c.evolution.deprecation_window == "P7D"  # the contract wins
    assert c.columns[0].nullable is False and c.columns[0].tags == ("key",)
    assert c.columns[1].description == "Own words."


def test_errors_in_defaults_point_into_contracts_yml(tmp_path: Path) -> None:
    write(tmp_path, "contracts.yml", "defaults:\n  evolution: {deprecation_window: 30 days}\n")
    path = write(tmp_path, "c.yaml", MINIMAL)
    with pytest.raises(ContractError) as caught:
        load_contract(path)
    (problem,) = caught.value.problems
    assert problem.location.path.endswith("contracts.yml")
    assert problem.location.line == 2
    assert "ISO-8601 duration" in problem.message


def test_bad_column_rule_regex_is_located(tmp_path: Path) -> None:
    write(tmp_path, "contracts.yml", "column_rules:\n  - match: '(unclosed'\n    nullable: false\n")
    with pytest.raises(ContractError) as caught:
        load_contract(write(tmp_path, "c.yaml", MINIMAL))
    assert "column_rules[0].match: invalid regex" in str(caught.value)


def test_examples_all_load(examples: Path) -> None:
    files = contract_files([examples])
    assert len(files) >= 3
    ids = {load_contract(f).contract.id for f in files}
    assert {"sales.orders", "sales.customers", "payments.transactions"} <= ids


def test_parse_contract_without_project(tmp_path: Path) -> None:
    loaded = parse_contract(MINIMAL, tmp_path / "x.yaml", None)
    assert loaded.contract.owner.team == "commerce"


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from delta_contracts.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "names = ('pyspark', 'sqlglot', 'pysail', 'deltalake', 'pandas', 'pydantic')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "HEAVY="


def test_diff_of_one_pair_imports_only_what_it_needs() -> None:
    """`delta-contracts diff OLD NEW` reads YAML into the models and compares them: no SQL parser, no engine,
    no rich, and of our modules only the diff command's, the contract model and the classification."""
    pair = [str(Path(__file__).resolve().parents[1] / "contracts" / "payments" / "transactions.yaml")] * 2
    code = (
        "import sys\n"
        f"sys.argv = ['delta-contracts', 'diff', *{pair!r}]\n"
        "from delta_contracts.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    print('EXIT', exit.code)\n"
        "print('MODULES=' + ','.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *printed, last = out.stdout.strip().splitlines()
    assert printed[0].startswith("payments.transactions ") and ": unchanged," in printed[0]
    assert printed[-1] == "EXIT 0"
    modules = set(last.removeprefix("MODULES=").split(","))
    assert {"pyspark", "sqlglot", "pysail", "deltalake", "pandas", "pyarrow", "rich"} & modules == set()
    ours = {m for m in modules if m.startswith("delta_contracts.")}
    # cli.errors: the one place errors become exit codes, which every command's application holds.
    cli = {
        "delta_contracts.cli",
        "delta_contracts.cli.errors",
        "delta_contracts.cli.common",
        "delta_contracts.cli.diff",
    }
    core = (
        "delta_contracts.contract",
        "delta_contracts.diff",
        "delta_contracts.target",
        "delta_contracts.errors",  # the exit codes and the base of every error (contract.errors imports it)
        "delta_contracts.tableid",  # the contract's table id as a value
    )
    assert {m for m in ours - cli if not m.startswith(core)} == set()  # no other command, no engine
    not_needed = {
        "delta_contracts.contract.lint",
        "delta_contracts.contract.reference",
        "delta_contracts.diff.gitbase",
    }
    assert ours & not_needed == set()
