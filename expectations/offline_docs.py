"""Make Great Expectations Data Docs read offline.

GX 1.24 pages load Bootstrap, bootstrap-table, jQuery, Font Awesome and Vega from CDNs and the logo
from S3 (STACK.md: offline they render unstyled, and the index page's table, which bootstrap-table
fills in from JavaScript, is empty). :func:`make_offline` rewrites every page of a docs folder:
it removes the remote ``<link>`` and ``<script>`` tags (and GX's newsletter footer), points the logo at GX's own copy in
``static/images`` and inlines a small stylesheet (the Bootstrap 4 classes the pages use) and a
small script standing in for the few jQuery / bootstrap-table calls the pages make (tables,
tabs, collapsible blocks, "show failed only"). Pages then load nothing from the internet.
Running it twice changes nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

MARKER = "<!-- cubeguard: offline -->"

_REMOTE_TAG = re.compile(
    r"<link\b[^>]*\bhref=[\"']https?://[^>]*>\s*|<script\b[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>\s*",
    re.IGNORECASE,
)
_NEWSLETTER = re.compile(r"<footer>\s*<p>Stay current on everything GX.*?</footer>\s*", re.DOTALL)
_REMOTE_ASSET = re.compile(r"https?://great-expectations-web-assets\.s3[\w.-]*\.amazonaws\.com/[^\"')\s]*")

OFFLINE_CSS = """
*,::after,::before{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;font-size:.9rem;
 line-height:1.5;color:#212529;background:#fff}
a{color:#0056b3;text-decoration:none}a:hover{text-decoration:underline}
h1,h2,h3,h4,h5,h6,.h6{margin:.5rem 0;font-weight:500;line-height:1.2}.lead{font-size:1.1rem}
.container-fluid{width:100%;padding:0 15px;margin:0 auto}
.row{display:flex;flex-wrap:wrap;margin:0 -15px}
[class*="col-"]{position:relative;width:100%;padding:0 15px}
.col-12{flex:0 0 100%;max-width:100%}
@media (min-width:768px){.col-md-2{flex:0 0 16.67%;max-width:16.67%}.col-md-10{flex:0 0 83.33%;max-width:83.33%}
 .col-md-4{flex:0 0 33.3%;max-width:33.3%}.col-md-6{flex:0 0 50%;max-width:50%}.col-md-8{flex:0 0 66.7%;max-width:66.7%}
 .d-md-block{display:block!important}.d-md-inline-flex{display:inline-flex!important}}
.d-none{display:none!important}.d-flex{display:flex!important}.d-sm-block{display:block}
.align-items-center{align-items:center}.float-left{float:left}.h-100{height:100%}
.sticky,.sticky-top{position:sticky;top:0;z-index:10}
.m-0{margin:0!important}.mb-0{margin-bottom:0!important}.mb-1{margin-bottom:.25rem}.mb-2{margin-bottom:.5rem}
.mb-3{margin-bottom:1rem}.mb-4{margin-bottom:1.5rem}.mt-0{margin-top:0}.mt-1{margin-top:.25rem}.mt-3{margin-top:1rem}
.ml-1{margin-left:.25rem}.ml-2{margin-left:.5rem}.mr-0{margin-right:0}.mr-2{margin-right:.5rem}.mr-auto{margin-right:auto}
.m-2{margin:.5rem}.p-0{padding:0!important}.p-1{padding:.25rem}.p-2{padding:.5rem}.p-3{padding:1rem}
.px-0{padding-left:0!important;padding-right:0!important}.pt-0{padding-top:0}.pb-0{padding-bottom:0}
.pb-1{padding-bottom:.25rem}.pt-4{padding-top:1.5rem}.pb-4{padding-bottom:1.5rem}.pl-5{padding-left:2rem}
.pr-5{padding-right:2rem}.pr-3{padding-right:1rem}
.navbar{display:flex;align-items:center;padding:.5rem 1rem;background:#fff}.navbar-brand img{height:40px!important}
.border-bottom{border-bottom:1px solid #dee2e6}.rounded{border-radius:.25rem}.bg-light{background:#f8f9fa}
.nav{display:flex;flex-wrap:wrap;padding:0;margin:0;list-style:none}.nav-link{display:block;padding:.4rem .8rem}
.nav-tabs{border-bottom:1px solid #dee2e6}.nav-tabs .nav-link.active{border:1px solid #dee2e6;border-bottom-color:#fff;
 border-radius:.25rem .25rem 0 0;background:#fff;color:#495057}
.nav-pills .nav-link.active{background:#0056b3;color:#fff;border-radius:.25rem}
.tab-pane{display:none}.tab-pane.active{display:block}.fade{transition:none}
.collapse:not(.show){display:none}
.breadcrumb{display:flex;flex-wrap:wrap;list-style:none;padding:.5rem 1rem;margin:0 0 1rem;background:#e9ecef;border-radius:.25rem}
.breadcrumb-item+.breadcrumb-item::before{content:"/";padding:0 .5rem;color:#6c757d}
.card{border:1px solid rgba(0,0,0,.125);border-radius:.25rem;background:#fff}
.card-header{background:rgba(0,0,0,.03);border-bottom:1px solid rgba(0,0,0,.125)}
.alert{position:relative;padding:.6rem 1rem;margin-bottom:1rem;border:1px solid transparent;border-radius:.25rem}
.alert-secondary{color:#383d41;background:#e2e3e5;border-color:#d6d8db}
.alert-warning{color:#856404;background:#fff3cd}.alert-danger{color:#721c24;background:#f8d7da}
.alert-success{color:#155724;background:#d4edda}
.badge{display:inline-block;padding:.25em .4em;font-size:75%;font-weight:700;line-height:1;border-radius:.25rem;
 white-space:nowrap;vertical-align:baseline}
.badge-secondary{color:#fff;background:#6c757d}.badge-danger{color:#fff;background:#dc3545}
.badge-success{color:#fff;background:#28a745}.badge-warning{color:#212529;background:#ffc107}
.badge-info{color:#fff;background:#17a2b8}.badge-primary{color:#fff;background:#0056b3}
.btn{display:inline-block;padding:.3rem .7rem;border:1px solid transparent;border-radius:.25rem;cursor:pointer;font-size:.85rem}
.btn-sm{padding:.2rem .5rem}.btn-primary{color:#fff;background:#0056b3}.btn-secondary{color:#fff;background:#6c757d}
.btn-group{display:inline-flex}.btn-group-toggle input{display:none}
.text-danger{color:#dc3545!important}.text-warning{color:#d39e00!important}.text-success{color:#28a745!important}
.text-info{color:#17a2b8!important}.text-muted{color:#6c757d!important}.text-center{text-align:center}
.table{width:100%;margin-bottom:1rem;border-collapse:collapse}
.table td,.table th,table.offline-table td,table.offline-table th{padding:.3rem .5rem;border-top:1px solid #dee2e6;
 vertical-align:top;text-align:left}
.table-bordered td,.table-bordered th{border:1px solid #dee2e6}.table-responsive{display:block;width:100%;overflow-x:auto}
table.offline-table{width:100%;border-collapse:collapse}table.offline-table thead th{border-bottom:2px solid #dee2e6}
table.offline-table tr.clickable-row:hover{background:#f2f6fa;cursor:pointer}
.cooltip .top{display:none}
.fas{font-style:normal;display:inline-block}
.fa-check-circle::before{content:"\\2714"}.fa-times::before{content:"\\2718"}
.fa-exclamation-triangle::before{content:"\\26A0"}.fa-question-circle::before{content:"?"}
.fa-comment::before{content:"\\1F4AC"}.fa-info-circle::before{content:"\\24D8"}
"""

OFFLINE_JS = """
(function () {
  function Q(sel) {
    if (typeof sel === "string") { this.els = Array.prototype.slice.call(document.querySelectorAll(sel)); }
    else if (sel && sel.els) { this.els = sel.els; }
    else { this.els = sel ? [sel] : []; }
  }
  Q.prototype.each = function (fn) { this.els.forEach(function (el, i) { fn(i, el); }); return this; };
  Q.prototype.ready = function (fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
    return this;
  };
  Q.prototype.on = function () { return this; };
  Q.prototype.modal = function () { return this; };
  Q.prototype.removeClass = function (c) { this.els.forEach(function (el) { el.classList.remove(c); }); return this; };
  Q.prototype.parent = function () {
    return new Q({ els: this.els.map(function (el) { return el.parentElement; }).filter(Boolean) });
  };
  Q.prototype.fadeIn = function () { this.els.forEach(function (el) { el.style.display = ""; }); return this; };
  Q.prototype.fadeOut = function () { this.els.forEach(function (el) { el.style.display = "none"; }); return this; };
  Q.prototype.prepend = function (html) {
    this.els.forEach(function (el) { el.insertAdjacentHTML("afterbegin", html); }); return this;
  };
  Q.prototype.bootstrapTable = function (opts) {
    if (!opts || typeof opts !== "object") { return this; }
    var cols = opts.columns || [], rows = (opts.data || []).slice();
    var key = opts.sortName;
    cols.forEach(function (c) { if (c.field === opts.sortName && c.sortName) { key = c.sortName; } });
    if (key) {
      var sign = opts.sortOrder === "desc" ? -1 : 1;
      rows.sort(function (a, b) { return a[key] < b[key] ? -sign : a[key] > b[key] ? sign : 0; });
    }
    this.els.forEach(function (table) {
      table.classList.add("offline-table");
      var head = "<thead><tr>" + cols.map(function (c) { return "<th>" + (c.title || c.field) + "</th>"; }).join("")
        + "</tr></thead>";
      var body = rows.map(function (r) {
        var link = opts.rowAttributes === "rowAttributesLinks" && r._table_row_link_path;
        var attrs = link ? " class=\\"clickable-row\\" data-href=\\"" + r._table_row_link_path + "\\"" : "";
        return "<tr" + attrs + ">" + cols.map(function (c) {
          var v = r[c.field]; return "<td>" + (v === undefined || v === null ? "" : v) + "</td>";
        }).join("") + "</tr>";
      }).join("");
      table.innerHTML = head + "<tbody>" + body + "</tbody>";
      Array.prototype.forEach.call(table.querySelectorAll("tr.clickable-row"), function (tr) {
        tr.addEventListener("click", function () { window.location = tr.getAttribute("data-href"); });
      });
    });
    return this;
  };
  window.$ = window.jQuery = function (sel) { return new Q(sel); };
  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("[data-toggle]") : null;
    if (!a) { return; }
    var kind = a.getAttribute("data-toggle"), target = document.querySelector(a.getAttribute("href") || "");
    if (!target) { return; }
    if (kind === "collapse") { e.preventDefault(); target.classList.toggle("show"); }
    if (kind === "tab") {
      e.preventDefault();
      Array.prototype.forEach.call(target.parentElement.children, function (p) { p.classList.remove("active", "show"); });
      target.classList.add("active", "show");
      var nav = a.closest(".nav");
      if (nav) { Array.prototype.forEach.call(nav.querySelectorAll(".nav-link"), function (l) { l.classList.remove("active"); }); }
      a.classList.add("active");
    }
  });
})();
"""


def _offline_page(html: str, logo: str) -> str:
    if MARKER in html:
        return html
    html = _NEWSLETTER.sub("", _REMOTE_TAG.sub("", html))
    html = _REMOTE_ASSET.sub(logo, html)
    inline = f"{MARKER}\n<style>{OFFLINE_CSS}</style>\n<script>{OFFLINE_JS}</script>\n"
    head = re.search(r"<head[^>]*>", html, re.IGNORECASE)
    at = head.end() if head else 0
    return html[:at] + "\n" + inline + html[at:]


def make_offline(docs_dir: Path) -> list[Path]:
    """Rewrite every ``*.html`` under ``docs_dir`` to load nothing remote; returns the pages changed."""
    logo_file = docs_dir / "static" / "images" / "logo-long.png"
    changed = []
    for page in sorted(docs_dir.rglob("*.html")):
        logo = Path(os.path.relpath(logo_file, page.parent)).as_posix()
        text = page.read_text(encoding="utf-8")
        new = _offline_page(text, logo)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed
