"""The readers report as one self-contained HTML file: inline SVG charts, sortable tables, no network."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from delta_contracts.telemetry.report import ObjectReport, coverage_of, label

_PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5", "#9c6b4e")
_STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{cursor:pointer;background:#f4f4f4}th[aria-sort]::after{content:" \\2195"}
.unknown{color:#b00020;font-weight:600}.legend span{margin-right:1em}.chart{margin:1em 0}
.gap{color:#b00020;font-weight:600}
"""
# Sort on click: numbers numerically, the rest as text; no library, no network.
_SCRIPT = """
document.querySelectorAll('table.readers th').forEach(function(th, col){
  th.addEventListener('click', function(){
    var table = th.closest('table'), body = table.tBodies[0];
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(function(h){ h.setAttribute('aria-sort', 'none'); });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function(a, b){
      var x = a.cells[col].getAttribute('data-value'), y = b.cells[col].getAttribute('data-value');
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function(r){ body.appendChild(r); });
  });
});
"""


def render_html(reports: Sequence[ObjectReport], title: str = "Readers of deprecated objects") -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    shared = coverage_of(reports)
    if shared is not None:
        items = "".join(f"<li>{escape(line)}</li>" for line in shared.lines())
        parts.append(f'<section class="coverage"><h2>Telemetry coverage</h2><ul>{items}</ul></section>')
    for index, report in enumerate(reports):
        parts.append(f'<section class="object" id="object-{index}"><h2>{escape(report.name)}</h2>')
        if not report.readers:
            text = report.no_readers
            klass = ' class="gap"' if report.gap else ""
            parts.append(f"<p{klass}>{escape(text[:1].upper() + text[1:])}.</p></section>")
            continue
        gap = f' <span class="gap">{escape(report.gap)}.</span>' if report.gap else ""
        parts.append(
            f"<p>{report.reads} read(s), {report.possible} possible; unknown readers: "
            f"{len(report.unknown)}.{gap}</p>"
        )
        parts.append(_chart(report))
        parts.append(_table(report))
        parts.append("</section>")
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def _chart(report: ObjectReport, width: int = 720, height: int = 240) -> str:
    """Stacked bars: one per day, one colour per reader."""
    days = sorted(report.daily)
    readers = [label(r.user, r.client) for r in report.readers]
    colours = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(readers)}
    peak = max((sum(report.daily[d].values()) for d in days), default=1) or 1
    left, bottom, top = 40, 30, 10
    plot_w, plot_h = width - left - 10, height - bottom - top
    step = plot_w / max(len(days), 1)
    bar = max(step * 0.7, 1.0)
    shapes = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#888"/>',
        f'<text x="{left - 6}" y="{top + 10}" text-anchor="end" font-size="11">{peak}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end" font-size="11">0</text>',
    ]
    for i, day in enumerate(days):
        x = left + i * step + (step - bar) / 2
        y = float(top + plot_h)
        for name in readers:
            count = report.daily[day].get(name, 0)
            if not count:
                continue
            h = plot_h * count / peak
            y -= h
            shapes.append(
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colours[name]}" data-day="{day}" data-reader="{escape(name)}" data-reads="{count}">'
                f"<title>{day} {escape(name)}: {count}</title></rect>"
            )
        if len(days) <= 14 or i % max(len(days) // 7, 1) == 0:
            shapes.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 10}" text-anchor="middle" font-size="10">'
                f"{day[5:]}</text>"
            )
    legend = "".join(
        f'<span><svg width="10" height="10"><rect width="10" height="10" fill="{c}"/></svg> '
        f"{escape(n)}</span>"
        for n, c in colours.items()
    )
    return (
        f'<div class="chart"><svg role="img" aria-label="reads per day per reader" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        + "".join(shapes)
        + f'</svg><div class="legend">{legend}</div></div>'
    )


def _table(report: ObjectReport) -> str:
    head = "".join(
        f'<th aria-sort="none">{h}</th>'
        for h in ("user", "client", "reads", "possible", "first read", "last read", "samples", "declared")
    )
    rows = []
    for r in report.readers:
        cells = [
            (r.user, r.user),
            (r.client, r.client),
            (str(r.reads), str(r.reads)),
            (str(r.possible), str(r.possible)),
            (_iso(r.first), _iso(r.first)),
            (_iso(r.last), _iso(r.last)),
            ("; ".join(r.examples()), ", ".join(r.samples)),
            ("yes" if r.declared else "no", "1" if r.declared else "0"),
        ]
        klass = "" if r.declared else ' class="unknown"'
        rows.append(
            f"<tr{klass}>"
            + "".join(f'<td data-value="{escape(v)}">{escape(t)}</td>' for t, v in cells)
            + "</tr>"
        )
    return f'<table class="readers"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _iso(value: object) -> str:
    from datetime import datetime

    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else "-"
