"""Small HTML builders for the report: escaped text, tables, inline images, the page's CSS and script.

Everything a page needs is inline (styles, script, images as ``data:`` URIs), so the report opens
offline and can be mailed or archived as one file. Every piece of text goes through
:func:`html.escape`; only this module writes tags.
"""

from __future__ import annotations

import base64
import html
import math
import numbers
from collections.abc import Iterable

import numpy as np
import pandas as pd

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0 auto; max-width: 1200px; padding: 1.5rem; color: #1d1d1f; background: #fff; line-height: 1.4; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { border-bottom: 2px solid #d0d7de; padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { margin-top: 1.6rem; }
.subtitle { color: #57606a; margin-top: 0; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 0 0 12px; }
dl.facts dt { color: #57606a; }
dl.facts dd { margin: 0; }
dl.definitions dt { margin-top: .4rem; }
dl.definitions dd { margin: 0 0 0 1.2rem; color: #24292f; }
.banner { background: #fff8c5; border: 1px solid #d4a72c; padding: .6rem .9rem; border-radius: 6px; }
nav ul { columns: 2; padding-left: 1.2rem; }
.scroll { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; font-size: .85rem; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; }
th { background: #f6f8fa; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #8c959f; text-align: center; }
td.pass { background: #dafbe1; color: #116329; font-weight: 600; }
td.fail { background: #ffebe9; color: #a40e26; font-weight: 600; }
.status-pass { color: #116329; font-weight: 600; }
.status-fail { color: #a40e26; font-weight: 600; }
.placeholder { color: #57606a; font-style: italic; }
figure { display: inline-block; margin: .5rem 1rem .5rem 0; vertical-align: top; }
figure img { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: .8rem; color: #57606a; max-width: 780px; }
code { background: #f6f8fa; padding: 0 .2rem; border-radius: 3px; }
footer { margin-top: 3rem; font-size: .8rem; color: #57606a; }
"""

# Registered first thing in <body>: script errors, failed image loads and rejected promises are
# written into the hidden #js-errors element, where a headless browser's DOM dump shows them.
SCRIPT = """
(function () {
  var box = document.getElementById("js-errors");
  function record(text) {
    var line = document.createElement("div");
    line.textContent = text;
    box.appendChild(line);
  }
  window.onerror = function (message, source, line, column) {
    record("error: " + message + " (" + source + ":" + line + ":" + column + ")");
    return false;
  };
  window.addEventListener("error", function (event) {
    var target = event.target;
    if (target && target !== window && target.tagName) {
      record("failed to load <" + target.tagName.toLowerCase() + "> " + (target.getAttribute("alt") || ""));
    }
  }, true);
  window.addEventListener("unhandledrejection", function (event) {
    record("unhandled rejection: " + event.reason);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.body.setAttribute("data-js", "ran");
  });
})();
"""


def esc(value: object) -> str:
    """Text escaped for HTML content and attribute values."""
    return html.escape(str(value), quote=True)


def _is_missing(value: object) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def cell(value: object) -> str:
    """One ``<td>``: numbers right-aligned with thousands separators or four significant digits."""
    if _is_missing(value):
        return '<td class="na">n/a</td>'
    if isinstance(value, (bool, np.bool_)):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, numbers.Integral):
        return f'<td class="num">{int(value):,}</td>'
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isinf(v):
            return f'<td class="num">{"-" if v < 0 else ""}inf</td>'
        text = f"{int(v):,}" if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
        return f'<td class="num">{text}</td>'
    return f"<td>{esc(value)}</td>"


def _header(frame: pd.DataFrame, index_name: str | None) -> str:
    corner = f"<th>{esc(index_name)}</th>" if index_name is not None else ""
    if isinstance(frame.columns, pd.MultiIndex) and frame.columns.nlevels == 2:
        groups: list[tuple[object, int]] = []
        for top, _ in frame.columns:
            if groups and groups[-1][0] == top:
                groups[-1] = (top, groups[-1][1] + 1)
            else:
                groups.append((top, 1))
        span = ' rowspan="2"' if corner else ""
        first = corner.replace("<th>", f"<th{span}>") + "".join(f'<th colspan="{n}">{esc(t)}</th>' for t, n in groups)
        second = "".join(f"<th>{esc(sub)}</th>" for _, sub in frame.columns)
        return f"<tr>{first}</tr><tr>{second}</tr>"
    return "<tr>" + corner + "".join(f"<th>{esc(c)}</th>" for c in frame.columns) + "</tr>"


def table(frame: pd.DataFrame, *, caption: str = "", index: bool = True, table_id: str | None = None) -> str:
    """A DataFrame as an escaped HTML table in a horizontally scrolling box."""
    index_name = (str(frame.index.name) if frame.index.name is not None else "") if index else None
    rows = []
    for label, values in zip(frame.index, frame.itertuples(index=False, name=None), strict=True):
        head = f"<th>{esc(label)}</th>" if index else ""
        rows.append("<tr>" + head + "".join(cell(v) for v in values) + "</tr>")
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    return (
        f'<div class="scroll"><table{ident}>{cap}<thead>{_header(frame, index_name)}</thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


_PASS_WORDS = frozenset({"pass", "passed", "passes", "ok", "true", "success", "yes"})
_FAIL_WORDS = frozenset({"fail", "failed", "fails", "false", "failure", "no"})


def outcome(value: object) -> bool | None:
    """A gate's result read as pass (True), fail (False) or unknown (None)."""
    if _is_missing(value):
        return None
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in _PASS_WORDS else False if word in _FAIL_WORDS else None
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return bool(value)
    return None


def status_table(rows: Iterable[dict[str, object]], columns: list[str], status: str | None) -> str:
    """Rows of dicts as a table whose ``status`` column is shown as pass/fail."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c)
            if c == status and outcome(v) is not None:
                cells.append('<td class="pass">pass</td>' if outcome(v) else '<td class="fail">fail</td>')
            elif isinstance(v, (dict, list, tuple)):
                cells.append(f"<td><code>{esc(v)}</code></td>")
            else:
                cells.append(cell(v))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table id="gates"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def definition_list(rows: Iterable[tuple[str, str, str]]) -> str:
    """``(key, meaning, source)`` rows as a definition list: the key as code, the source in italics."""
    items = "".join(f"<dt><code>{esc(k)}</code></dt><dd>{esc(text)} <em>{esc(src)}</em></dd>" for k, text, src in rows)
    return f'<dl class="definitions">{items}</dl>'


def image(png: bytes, alt: str, caption: str = "") -> str:
    """A PNG inlined as a ``data:`` URI, with its caption."""
    data = base64.b64encode(png).decode("ascii")
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="data:image/png;base64,{data}" alt="{esc(alt)}">{cap}</figure>'


def page(title: str, body: str) -> str:
    """The whole document: inline CSS, the error-recording script first in ``<body>``, then ``body``."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        '<body data-js="off"><div id="js-errors" hidden></div>'
        f"<script>{SCRIPT}</script>\n{body}\n</body></html>\n"
    )
