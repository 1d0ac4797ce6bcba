"""The renderer of a method's report section: a :class:`~cubeguard.methods.section.Section` as HTML.

Methods describe their section without HTML (:mod:`cubeguard.methods.section`); this module turns
it into the page's markup: the title as an ``<h2>`` carrying the section's anchor, headings as
``<h3>``, paragraphs, tables and inline pictures through :mod:`cubeguard.report._markup`, every
piece of text escaped.
"""

from __future__ import annotations

from typing import assert_never

from cubeguard.methods.section import Heading, Part, Picture, Section, Table, Text
from cubeguard.report._markup import esc, image, table


def _part(part: Part) -> str:
    if isinstance(part, Heading):
        return f"<h3>{esc(part.text)}</h3>"
    if isinstance(part, Text):
        strong = f"<strong>{esc(part.strong)}</strong>" if part.strong is not None else ""
        return f"<p>{esc(part.text)}{strong}{esc(part.tail)}</p>"
    if isinstance(part, Table):
        return table(part.frame, caption=part.caption, index=part.index)
    if isinstance(part, Picture):
        return image(part.png, part.alt, part.caption)
    assert_never(part)  # a new kind of part needs its markup here


def render(section: Section | None) -> str:
    """The section's HTML: its titled, anchored heading, then its parts in order; empty for None."""
    if section is None:
        return ""
    head = f'<h2 id="{esc(section.anchor)}">{esc(section.title)}</h2>'
    return head + "".join(_part(p) for p in section.parts)
