"""``index.html``: the report in one self-contained file (standard library only).

The body is ``index.md`` turned into HTML (``md_to_html``: the markdown the report writes:
headings, lists, tables, paragraphs, images, links, inline code, bold and italics), followed by
the figure each finding links to, inline as base64 PNG up to ``INLINE_BYTES`` in all (other
figures stay links to ``figures/``), and by the table of every verdict row with its full explanations,
sortable (click a heading) and filterable (a text box) by a few lines of inline JavaScript.
Nothing is fetched from elsewhere.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from stabsim.judging.errata import link_ids
from stabsim.reporting.findings import finding_groups
from stabsim.reporting.pages import EXPLANATION_CHARS, TABLE_COLUMNS, cut, table_rows

__all__ = ["INLINE_BYTES", "md_to_html", "inline_md", "slug", "write_html", "html_page"]

#: the findings' figures are inlined until their PNG bytes reach this total; the rest are linked.
INLINE_BYTES = 3_000_000

_SPAN = re.compile(r"`([^`\n]+)`|!\[([^\]\n]*)\]\(([^)\s]+)\)|\[([^\]\n]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])")


def _plain(text: str) -> str:
    t = html.escape(text, quote=False)
    return _EM.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", t))


def inline_md(text: str, href=lambda u: u, img=lambda u: u) -> str:
    """Markdown of one line as HTML: code spans, images, links, bold, italics; the rest escaped.
    ``href`` / ``img`` map a link's / an image's target (e.g. onto an in-page anchor)."""
    out, pos = [], 0
    for m in _SPAN.finditer(text):
        out.append(_plain(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append(f"<code>{html.escape(m.group(1), quote=False)}</code>")
        elif m.group(3) is not None:
            out.append(f'<img alt="{html.escape(m.group(2))}" src="{html.escape(img(m.group(3)))}">')
        else:
            out.append(f'<a href="{html.escape(href(m.group(5)))}">{inline_md(m.group(4))}</a>')
        pos = m.end()
    out.append(_plain(text[pos:]))
    return "".join(out)


def slug(title: str) -> str:
    """The anchor of a heading, as GitHub makes it ("Theorem bounds: best tightness" ->
    "theorem-bounds-best-tightness")."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _cells(line: str) -> list[str]:
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def md_to_html(text: str, href=lambda u: u, img=lambda u: u) -> str:
    """The markdown the report writes, as HTML."""
    out, para, items = [], [], []
    lines = text.splitlines()

    def ul(entries):
        return "<ul>\n" + "\n".join(f"<li>{inline_md(t, href, img)}" + (ul(sub) if sub else "") + "</li>"
                                      for t, sub in entries) + "\n</ul>"

    def flush():
        if para:
            out.append("<p>" + "<br>\n".join(inline_md(p, href, img) for p in para) + "</p>")
            para.clear()
        if items:
            out.append(ul(items))
            items.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            flush()
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            head, body = _cells(block[0]), [_cells(b) for b in block[2:]]
            out.append("<table>\n<thead><tr>" + "".join(f"<th>{inline_md(h, href, img)}</th>" for h in head)
                       + "</tr></thead>\n<tbody>\n" + "\n".join(
                           "<tr>" + "".join(f"<td>{inline_md(c, href, img)}</td>" for c in row) + "</tr>"
                           for row in body) + "\n</tbody>\n</table>")
            continue
        m = re.match(r"(#{1,6}) (.*)", line)
        if m:
            flush()
            n = len(m.group(1))
            out.append(f'<h{n} id="{slug(m.group(2))}">{inline_md(m.group(2), href, img)}</h{n}>')
        elif line.startswith("- "):
            if para:
                flush()
            items.append((line[2:], []))
        elif line.startswith("  - ") and items:
            items[-1][1].append((line[4:], []))
        elif not line.strip():
            flush()
        else:
            if items:
                flush()
            para.append(line)
        i += 1
    flush()
    return "\n".join(out)


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _inline_figures(rows: list[dict], reports_dir: Path, budget: int) -> dict:
    """{figure path: (anchor, data URI)} for the figure each finding links to (its first row's that
    has one), in order, while their bytes stay within ``budget``."""
    out, used = {}, 0
    for g in finding_groups(rows):
        fig = next((str(r["figure"]) for r in g["rows"] if r.get("figure")), "")
        p = reports_dir / fig
        if not fig or fig in out or not p.is_file() or used + p.stat().st_size > budget:
            continue
        used += p.stat().st_size
        out[fig] = (f"fig-{len(out) + 1}", _data_uri(p))
    return out


_SCRIPT = """
const table = document.getElementById('verdict-table');
const body = table.tBodies[0];
document.getElementById('filter').addEventListener('input', e => {
  const terms = e.target.value.toLowerCase().split(/\\s+/).filter(Boolean);
  let shown = 0;
  for (const tr of body.rows) {
    const text = tr.textContent.toLowerCase();
    tr.hidden = !terms.every(t => text.includes(t));
    shown += !tr.hidden;
  }
  document.getElementById('shown').textContent = shown;
});
table.tHead.querySelectorAll('th').forEach((th, col) => th.addEventListener('click', () => {
  const up = th.dataset.dir !== 'up';
  th.dataset.dir = up ? 'up' : 'down';
  const key = tr => tr.cells[col].textContent.trim();
  const rows = Array.from(body.rows).sort((a, b) => {
    const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
    const c = (isFinite(nx) && isFinite(ny)) ? nx - ny : x.localeCompare(y);
    return up ? c : -c;
  });
  rows.forEach(tr => body.appendChild(tr));
}));
"""

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; max-width: 110em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 2px 5px; vertical-align: top; }
th { background: #eee; cursor: pointer; position: sticky; top: 0; }
tr.failed td { background: #fff3f0; }
figure img { max-width: 48em; }
code { background: #f4f4f4; }
"""


def _verdict_table(rows: list[dict], figs: dict, errata_base: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _ in TABLE_COLUMNS)
    body = []
    for t in table_rows(rows):
        cells = []
        for _, k in TABLE_COLUMNS:
            v = str(t[k])
            if k == "figure" and v:
                cell = f'<a href="{html.escape("#" + figs[v][0] if v in figs else v)}">png</a>'
            elif k == "summary" and v:
                cell = f'<a href="{html.escape(v)}">summary</a>'
            elif k == "explanation" and len(v) > EXPLANATION_CHARS:
                cell = (f"<details><summary>{inline_md(link_ids(cut(v), errata_base))}</summary>"
                        f"{inline_md(link_ids(v, errata_base))}</details>")
            elif k == "explanation":
                cell = inline_md(link_ids(v, errata_base))
            else:
                cell = html.escape(v)
            cells.append(f"<td>{cell}</td>")
        body.append(f'<tr{" class=failed" if t["failed"] else ""}>' + "".join(cells) + "</tr>")
    return (f'<h2 id="all-verdicts">All verdict rows</h2>\n<p>Filter: <input id="filter" size="40" '
            f'placeholder="words that a row must contain, e.g. P3 finding"> <span id="shown">{len(rows)}</span> of '
            f'{len(rows)} rows shown; click a heading to sort.</p>\n<table id="verdict-table">\n<thead><tr>{head}'
            f'</tr></thead>\n<tbody>\n' + "\n".join(body) + "\n</tbody>\n</table>")


def html_page(index_md: str, rows: list[dict], reports_dir, errata_base: str = "../docs/errata.md",
              budget: int = INLINE_BYTES) -> str:
    """The text of ``index.html`` for ``index_md`` (the text of index.md) and ``rows``."""
    figs = _inline_figures(rows, Path(reports_dir), budget)
    pages = {"verdicts.md": "#all-verdicts", "index.html": "#", "index.md": "#"}

    def href(u):
        return pages.get(u) or ("#" + figs[u][0] if u in figs else u)

    def img(u):
        return figs[u][1] if u in figs else u

    body = md_to_html(index_md, href, img)
    figures = "\n".join(f'<figure id="{a}"><img alt="{html.escape(p)}" src="{uri}"><figcaption>'
                        f'<a href="{html.escape(p)}">{html.escape(p)}</a></figcaption></figure>'
                        for p, (a, uri) in figs.items())
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>stabsim report</title>"
            f"<style>{_STYLE}</style></head>\n<body>\n{body}\n"
            + (f'<h2 id="findings-figures">Figures of the findings</h2>\n{figures}\n' if figs else "")
            + _verdict_table(rows, figs, errata_base) + f"\n<script>{_SCRIPT}</script>\n</body></html>\n")


def write_html(index_md: str, rows: list[dict], reports_dir, errata_base: str = "../docs/errata.md") -> Path:
    """Write ``reports_dir/index.html``; returns its path."""
    path = Path(reports_dir) / "index.html"
    path.write_text(html_page(index_md, rows, reports_dir, errata_base), encoding="utf-8")
    return path
