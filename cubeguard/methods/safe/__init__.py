"""SAFE (Höhne 2011): pre-tabular microaggregation so that no table of the released microdata has a 1 or a 2."""

from cubeguard.methods.base import MicrodataMethod
from cubeguard.methods.safe import section
from cubeguard.methods.safe.controlled import Controlled, Dimension, build
from cubeguard.methods.safe.deviations import describe, deviation_tables, markdown
from cubeguard.methods.safe.elementary import Elementary, elementary
from cubeguard.methods.safe.method import apply, check, columns, public
from cubeguard.methods.safe.model import Bounds, SafeStep
from cubeguard.methods.safe.search import Outcome, Settings, search

METHOD = MicrodataMethod(
    model=SafeStep,
    public=public,
    columns=columns,
    apply=apply,
    check=check,
    forbids=(1, 2),
    describe=describe,
    section=section.section,
)

__all__ = [
    "METHOD",
    "Bounds",
    "Controlled",
    "Dimension",
    "Elementary",
    "Outcome",
    "SafeStep",
    "Settings",
    "build",
    "deviation_tables",
    "elementary",
    "markdown",
    "search",
]
