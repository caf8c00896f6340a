"""The site as static HTML: `index.html` and `tables/<id>.html`, self-contained (inline CSS and SVG; no
script, font or image from anywhere). Every text from a contract, the ledger or the readers log is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from pathlib import Path

from delta_contracts.site.gather import (
    APPLIED,
    FAILED,
    NOT_NEEDED,
    PENDING,
    UNKNOWN,
    WAITING,
    MigrationState,
    Site,
    TablePage,
)

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#1f3a5f;color:#fff;padding:12px 24px}header a{color:#fff}
main{padding:8px 24px 40px;max-width:1200px}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff}
th,td{border:1px solid #d5d5d5;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}code{font:12px ui-monospace,monospace;background:#f0f0f0;padding:0 3px}
.muted{color:#666}.tag{display:inline-block;background:#e7eef8;border-radius:3px;padding:0 5px;margin:1px}
.pii{background:#fde2e1;color:#8a1c14}
.state{font-weight:600;border-radius:3px;padding:0 5px;white-space:nowrap}
.applied{background:#dff3e4;color:#14632b}.pending{background:#fff4cc;color:#6b5200}
.waiting{background:#ffe1c2;color:#7a3b00}.failed{background:#fde2e1;color:#8a1c14}
.unknown,.not-needed{background:#eee;color:#555}
.major{color:#8a1c14;font-weight:600}.minor{color:#6b5200}.patch{color:#555}
.legend span{margin-right:1em}.chart{margin:8px 0}.unknown-reader{color:#b00020;font-weight:600}
"""
_STATE_CLASS = {
    APPLIED: "applied",
    PENDING: "pending",
    WAITING: "waiting",
    FAILED: "failed",
    NOT_NEEDED: "not-needed",
    UNKNOWN: "unknown",
}


def page_name(contract_id: str) -> str:
    """A file name for a table's page: the id, with anything but letters, digits, `.`, `_`, `-` replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", contract_id) + ".html"


def write_site(site: Site, folder: Path) -> list[Path]:
    """Write the pages into `folder` (created); returns the files written."""
    tables = folder / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    written = [folder / "index.html"]
    written[0].write_text(render_index(site), encoding="utf-8")
    for page in site.pages:
        path = tables / page_name(page.contract_id)
        path.write_text(render_table(page, site), encoding="utf-8")
        written.append(path)
    return written


def _document(title: str, body: Iterable[str], home: str) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            # No request may leave the folder: the browser refuses any that would.
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
            f'<header><a href="{home}">delta-contracts</a> · {escape(title)}</header><main>',
            *body,
            "</main></body></html>",
        ]
    )


def _when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value else "-"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """`rows` cells are HTML already (escaped by the caller)."""
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _state(state: str) -> str:
    return f'<span class="state {_STATE_CLASS.get(state, "unknown")}">{escape(state)}</span>'


def _matrix(site: Site) -> list[str]:
    """contract × environment, as `status --all-envs` shows it, when contracts.yml declares environments."""
    from delta_contracts.apply.status import cell_summary

    if not site.matrix:
        return []
    environments = list(dict.fromkeys(str(c["environment"]) for c in site.matrix))
    by_contract: dict[str, dict[str, Mapping[str, object]]] = {}
    for cell in site.matrix:
        by_contract.setdefault(str(cell["contract"]), {})[str(cell["environment"])] = cell
    rows = [
        [
            escape(contract),
            *(
                f"{escape(str(row[e].get('table') or ''))}<br>{escape(cell_summary(row[e]))}"
                if e in row
                else ""
                for e in environments
            ),
        ]
        for contract, row in by_contract.items()
    ]
    pages = f" (these pages: {escape(site.environment)})" if site.environment else ""
    return [f"<h2>Environments{pages}</h2>", _table(["contract", *environments], rows)]


def render_index(site: Site) -> str:
    rows = []
    for page in site.pages:
        contract = page.loaded.contract
        pending = []
        for m in page.migrations:
            phases = [(phase, state) for phase, state in m.phases() if state in (PENDING, WAITING, FAILED)]
            if phases:
                shown = ", ".join(f"{escape(phase)} {_state(state)}" for phase, state in phases)
                pending.append(f"{escape(m.migration_id)}: {shown}")
        link = f'<a href="tables/{escape(page_name(contract.id))}">{escape(contract.id)}</a>'
        rows.append(
            [
                link,
                escape(contract.version),
                escape(contract.owner.team),
                escape(contract.lifecycle.status.value),
                str(len(page.deprecations)),
                "<br>".join(pending) or '<span class="muted">none</span>',
                str(len({(r.user, r.client) for report in page.readers for r in report.readers})),
            ]
        )
    body = [
        "<h1>Data contracts</h1>",
        f'<p class="muted">{len(site.pages)} contract(s); generated {_when(site.generated_at)}.</p>',
        _table(
            ["table", "version", "owner", "lifecycle", "deprecations", "phases not applied", "readers"], rows
        ),
        *_matrix(site),
        "<h2>Sources</h2>",
        _table(["what", "from"], [[escape(k), escape(v)] for k, v in site.sources.items()]),
    ]
    return _document("Data contracts", body, "index.html")


def render_table(page: TablePage, site: Site) -> str:
    contract = page.loaded.contract
    body = [f'<h1>{escape(contract.id)} <span class="muted">{escape(contract.version)}</span></h1>']
    if contract.description:
        body.append(f"<p>{escape(contract.description)}</p>")
    body.append(_overview(page))
    body += ["<h2>Columns</h2>", _columns(page)]
    body += ["<h2>Rules</h2>", _rules(page)]
    body += ["<h2>Version history</h2>", _history(page)]
    body += ["<h2>Migrations</h2>", _migrations(page)]
    body += ["<h2>Deprecations</h2>", _deprecations(page)]
    body += ["<h2>Readers of deprecated objects</h2>", _readers(page)]
    body += ["<h2>Drift</h2>", _drift(page)]
    body += ["<h2>Last validate</h2>", _validation(page)]
    return _document(contract.id, body, "../index.html")


def _overview(page: TablePage) -> str:
    contract = page.loaded.contract
    owner = escape(contract.owner.team) + (
        f" ({escape(contract.owner.email)})" if contract.owner.email else ""
    )
    consumers = (
        ", ".join(escape(c.name) for c in contract.consumers) or '<span class="muted">none declared</span>'
    )
    tags = "".join(f'<span class="tag">{escape(t)}</span>' for t in contract.tags) or "-"
    rows = [
        ["owner", owner],
        ["consumers", consumers],
        ["tags", tags],
        ["lifecycle", escape(contract.lifecycle.status.value)],
        ["versioning", escape(contract.table.versioning.value)],
        [
            "evolution",
            escape(
                f"{contract.evolution.policy.value}; deprecation window "
                f"{contract.evolution.deprecation_window}; reader lookback "
                f"{contract.evolution.reader_lookback}"
            ),
        ],
        ["file", f"<code>{escape(page.file)}</code>"],
    ]
    if page.live is not None:
        rows.append(["live table", escape(f"{page.live['table']} (stamped {page.live['stamped']})")])
    return _table(["", ""], rows)


def _columns(page: TablePage) -> str:
    rows = []
    for column in page.loaded.contract.columns:
        # `pii: true` is the PII badge; a `pii` tag (a column rule's, say) says the same: one badge
        shown = [t for t in column.tags if not (column.pii and t.casefold() == "pii")]
        tags = "".join(f'<span class="tag">{escape(t)}</span>' for t in shown)
        if column.pii:
            tags = '<span class="tag pii">PII</span>' + tags
        notes = []
        if column.renamed_from:
            notes.append(f"renamed from {column.renamed_from}")
        if column.deprecated is not None:
            replaced = (
                f", replaced by {column.deprecated.replaced_by}" if column.deprecated.replaced_by else ""
            )
            notes.append(f"deprecated since {column.deprecated.since}{replaced}")
        if column.default is not None:
            notes.append(f"default {column.default!r}")
        rows.append(
            [
                f"<code>{escape(column.name)}</code>",
                f"<code>{escape(column.type)}</code>",
                "yes" if column.nullable else "NOT NULL",
                escape(column.description or ""),
                tags or "-",
                escape("; ".join(notes)) or "-",
            ]
        )
    return _table(["column", "type", "nullable", "description", "tags", "notes"], rows)


def _rules(page: TablePage) -> str:
    contract = page.loaded.contract
    rows = []
    for column in contract.columns:
        checks = column.checks
        for kind, value in (
            ("min", checks.min),
            ("max", checks.max),
            ("enum", checks.enum),
            ("regex", checks.regex),
        ):
            if value is not None:
                shown = ", ".join(map(str, value)) if isinstance(value, tuple) else str(value)
                rows.append(
                    [f"<code>{escape(column.name)}</code>", escape(kind), f"<code>{escape(shown)}</code>"]
                )
    for constraint in contract.constraints:
        rows.append(["(table)", escape(constraint.name), f"<code>{escape(constraint.expression)}</code>"])
    quality = contract.quality
    if quality.freshness:
        rows.append(
            [
                "(quality)",
                "freshness",
                escape(f"{quality.freshness.column} within {quality.freshness.max_age}"),
            ]
        )
    if quality.volume:
        rows.append(
            [
                "(quality)",
                "volume",
                escape(
                    ", ".join(
                        f"{k} {v}"
                        for k, v in (("min", quality.volume.min_rows), ("max", quality.volume.max_rows))
                        if v is not None
                    )
                ),
            ]
        )
    for keys in quality.unique:
        rows.append(["(quality)", "unique", escape(", ".join(keys))])
    for item in quality.completeness:
        rows.append(["(quality)", "completeness", escape(f"{item.column} ≥ {item.min_ratio}")])
    if not rows:
        return '<p class="muted">No rules.</p>'
    return _table(["on", "rule", "value"], rows)


def _history(page: TablePage) -> str:
    if not page.history:
        return '<p class="muted">No git history (the file is not in a git repository).</p>'
    rows = []
    for version in page.history:
        changes = "<br>".join(
            f'<span class="{escape(c.change_class.value)}">{escape(c.code)}</span> {escape(c.message)}'
            for c in version.changes
        ) or escape(version.error or ("first version" if version.required == "new" else "-"))
        rows.append(
            [
                f"<code>{escape(version.commit)}</code>",
                escape(version.date[:10]),
                escape(version.version or "?"),
                f'<span class="{escape(version.required)}">{escape(version.required)}</span>',
                escape(version.subject),
                changes,
            ]
        )
    return _table(["commit", "date", "version", "bump", "subject", "changes"], rows)


def _migration(migration: MigrationState) -> str:
    phases = " ".join(f"{escape(phase)} {_state(state)}" for phase, state in migration.phases())
    rows = []
    for op in migration.ops:
        why = "<br>".join(escape(w) for w in op.why if w)
        rows.append([str(op.index), escape(op.phase), escape(op.summary), _state(op.state), why or "-"])
    head = (
        f'<h3>{escape(migration.migration_id)} <span class="muted">{escape(migration.from_version or "new")}'
        f" → {escape(migration.to_version)}, {escape(migration.strategy)}</span></h3><p>{phases}</p>"
    )
    return head + _table(["op", "phase", "what", "state", "why"], rows)


def _migrations(page: TablePage) -> str:
    if page.migrations_error:
        return f'<p class="failed">{escape(page.migrations_error)}</p>'
    if not page.migrations:
        return '<p class="muted">No migrations planned.</p>'
    return "".join(_migration(m) for m in reversed(page.migrations))


def _deprecations(page: TablePage) -> str:
    if not page.deprecations:
        return '<p class="muted">Nothing deprecated.</p>'
    rows = [
        [
            f"<code>{escape(d.object)}</code>",
            escape(d.since),
            escape(d.replaced_by or "-"),
            escape(d.window),
            escape(_when(d.marked_at)) if d.marked_at else '<span class="muted">not marked yet</span>',
            escape(_when(d.ends_at)),
        ]
        for d in page.deprecations
    ]
    return _table(["object", "since", "replaced by", "window", "marked", "window ends"], rows)


def _readers(page: TablePage) -> str:
    # The readers report's own chart (one stacked bar per day, a colour per reader), so both draw alike.
    from delta_contracts.telemetry.report_html import _chart

    if not page.readers:
        return '<p class="muted">No telemetry for this table: the readers log holds no read of it.</p>'
    parts = []
    shared = next((r.coverage for r in page.readers if r.coverage is not None), None)
    if shared is not None:
        parts.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in shared.lines()) + "</ul>")
    for report in page.readers:
        parts.append(f"<h3><code>{escape(report.name)}</code></h3>")
        if not report.readers:
            text = report.no_readers
            klass = "unknown-reader" if report.gap else "muted"
            parts.append(f'<p class="{klass}">{escape(text[:1].upper() + text[1:])}.</p>')
            continue
        if report.gap:
            parts.append(f'<p class="unknown-reader">{escape(report.gap[:1].upper() + report.gap[1:])}.</p>')
        parts.append(_chart(report))
        rows = [
            [
                escape(r.user),
                escape(r.client),
                str(r.reads),
                escape(_when(r.last)),
                f"<code>{escape(r.samples[0])}</code>" if r.samples else "-",
                "yes" if r.declared else '<span class="unknown-reader">no (unknown reader)</span>',
            ]
            for r in report.readers
        ]
        parts.append(
            _table(["user", "client", "statements", "last read", "sample", "declared consumer"], rows)
        )
    return "".join(parts)


def _drift(page: TablePage) -> str:
    if page.drift is None:
        return '<p class="muted">Not checked: live state needs <code>--engine</code>.</p>'
    real = [d for d in page.drift if d.is_drift]
    if not page.drift:
        return "<p>No drift.</p>"
    rows = [
        [escape(d.kind), escape(d.subject or "-"), escape(d.message), "drift" if d.is_drift else "note"]
        for d in page.drift
    ]
    return f"<p>{len(real)} drift item(s).</p>" + _table(["kind", "subject", "detail", ""], rows)


def _validation(page: TablePage) -> str:
    result = page.validation
    if result is None:
        return '<p class="muted">No validate result recorded (give <code>--validation FILE</code>).</p>'
    passed = bool(result.get("passed"))
    state = (
        '<span class="state applied">passed</span>' if passed else '<span class="state failed">failed</span>'
    )
    rows = [
        [
            escape(str(r.get("rule"))),
            escape(str(r.get("kind"))),
            "pass" if r.get("passed") else "FAIL",
            escape(str(r.get("failing"))),
            escape(str(r.get("detail") or "")),
        ]
        for r in result.get("rules", [])
        if isinstance(r, dict)
    ]
    error = f'<p class="failed">{escape(str(result["error"]))}</p>' if result.get("error") else ""
    head = f"<p>{state} on {escape(str(result.get('rows')))} row(s) of {escape(str(result.get('table')))}</p>"
    return head + error + _table(["rule", "kind", "result", "failing rows", "detail"], rows)
