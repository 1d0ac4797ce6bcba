"""A served release is kept out of the garbage collector's full collections, and a replaced one is freed.

An opened release is hundreds of thousands of long-lived Python objects at the EU programme's size;
walked in every full collection, one collection held the GIL for 0.87 s under load. The served app
freezes them (``create_app(freeze=True)``, ``service.memory.settle``); a reload unfreezes, collects
and freezes again, so the release it replaced does not stay frozen with its reference cycles.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.app import create_app
from tests.tables_release import publish


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish(tmp_path_factory.mktemp("gc"))


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Leave the test process as it was: nothing frozen afterwards."""
    yield
    gc.unfreeze()


def _collected(obj: object) -> bool:
    """Whether the collector's generations hold ``obj`` (frozen objects are in none of them)."""
    return any(o is obj for o in gc.get_objects())


@pytest.mark.usefixtures("unfrozen")
def test_the_served_engine_is_frozen_and_a_reloaded_one_too(config: Path) -> None:
    service = create_app(config, precompute=False, freeze=True).state.service
    first = service.engine
    assert not _collected(first) and not _collected(first.store)
    replaced = weakref.ref(first)
    first.cycle = [first]  # a reference cycle: only a collection frees it
    del first
    service.reload(None)  # the same release, opened anew
    assert replaced() is None  # freed: unfrozen, collected, not kept
    assert not _collected(service.engine)


@pytest.mark.usefixtures("unfrozen")
def test_an_app_that_does_not_freeze_leaves_its_engine_to_the_collector(config: Path) -> None:
    service = create_app(config, precompute=False).state.service
    assert _collected(service.engine)  # what the test above would see without the freeze
