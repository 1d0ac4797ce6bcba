"""A method's section of the release report, described without HTML.

A method tells the report what it did through its ``section`` hook (:attr:`CubeMethod.section
<cubeguard.methods.base.CubeMethod.section>`, :attr:`MicrodataMethod.section
<cubeguard.methods.base.MicrodataMethod.section>`), which returns a :class:`Section`: a title and
a list of parts (headings, paragraphs, tables, pictures). The report layer renders it
(:func:`cubeguard.report.section.render`) and escapes every piece of text; a method writes no tag.
Methods describe, the report renders: methods sit below the report in the layer order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Heading:
    """A sub-heading of the section (one per step, usually)."""

    text: str


@dataclass(frozen=True)
class Text:
    """A paragraph: ``text``, then ``strong`` in bold if given, then ``tail``."""

    text: str
    strong: str | None = None
    tail: str = ""


@dataclass(frozen=True)
class Table:
    """A frame shown as a table (numbers formatted by the report), with an optional caption.

    Attributes:
        frame: the rows; its index is the first column (headed by the index's name) unless
            ``index`` is False.
        caption: shown above the table; empty: none.
        index: whether to show the index.
    """

    frame: pd.DataFrame
    caption: str = ""
    index: bool = True


@dataclass(frozen=True)
class Picture:
    """A PNG image inlined in the page, with its alternative text and caption."""

    png: bytes
    alt: str
    caption: str = ""


Part = Heading | Text | Table | Picture


@dataclass(frozen=True)
class Section:
    """A section of the release report: its anchor (the page's link target), title and parts in order.

    Attributes:
        anchor: the HTML id of the section's heading, unique in the page (e.g. ``"safe-section"``).
        title: the section's heading and its entry in the page's navigation.
        parts: what the section shows, in order.
    """

    anchor: str
    title: str
    parts: Sequence[Part]
