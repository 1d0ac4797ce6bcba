"""What an intruder who knows a cube's post-tabular steps, secret parameters included, learns of its counts."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from cubeguard.attack.system import Bounder
from cubeguard.config.load import Release
from cubeguard.methods.models import StepModel
from cubeguard.methods.registry import CUBE_METHODS

FloatArray = npt.NDArray[np.float64]
#: A step with its secrets resolved, from its index in ``steps`` and its config model.
Resolved = Callable[[int, StepModel], StepModel]


def step_bounds(release: Release, cube_id: str, resolved: Resolved) -> Bounder | None:
    """The bounds of ``cube_id``'s counts from the steps that published it (None: unbounded).

    Steps are undone last first: the last step's bounds give an interval of its input, and each
    earlier step's bounds are applied to that interval's ends (every method's bounds grow with
    the published count). A method without bounds leaves the cube unbounded. A cube that no
    post-tabular step changes is exact, unless a pre-tabular step changed the microdata.
    """
    functions = []
    for k, step in release.config.steps_for(cube_id):
        maker = CUBE_METHODS[step.method].bounds
        if maker is None:
            return None
        functions.append(maker(resolved(k, step)))
    if not functions and release.config.pre_tabular:
        return None
    return composed(functions[::-1])


def composed(functions: list[Callable[..., tuple[FloatArray, FloatArray]]]) -> Bounder:
    """Bounds that undo ``functions`` (each a step's bounds) in the order given."""

    def bounds(published: npt.NDArray[np.int64], interior: npt.NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
        lo = hi = published.astype(np.float64)
        for fn in functions:
            low, _ = fn(np.maximum(np.ceil(lo), 0).astype(np.int64), interior)
            top = np.isinf(hi)
            _, high = fn(np.where(top, 0, np.minimum(hi, 2**40)).astype(np.int64), interior)
            lo, hi = low, np.where(top, np.inf, high)
        return lo, hi

    return bounds
