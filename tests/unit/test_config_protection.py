"""No unprotected release: each cube needs a protection step, the release a disclosure gate, or a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubeguard.config import load_release
from cubeguard.config.protection import require_protection
from cubeguard.errors import ConfigError
from tests.conftest import TINY_CONFIG, TINY_GATES

CKM = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"


def _release(tmp_path: Path, text: str) -> object:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_release(path)


def _line(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


def test_the_tiny_release_protects_every_cube(tmp_path: Path) -> None:
    require_protection(_release(tmp_path, TINY_CONFIG))


def test_a_cube_no_step_protects_is_refused_with_its_line(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace(
        CKM, "  - {method: cell_key, D: 5, V: 3, js: 2, cubes: [c1]}\n  - {method: identity, cubes: [c2, hh]}\n"
    )
    with pytest.raises(ConfigError) as info:
        require_protection(_release(tmp_path, text))
    assert info.value.problems == [
        f"hypercubes[1] (c.yaml line {_line(text, '  - {id: c2')}): cube 'c2' would be published unprotected: "
        "no protection step applies to it; add one to steps (e.g. cell_key) "
        'or set allow_unprotected: "<reason>" at the top level',
        f"hypercubes[2] (c.yaml line {_line(text, '  - {id: hh')}): cube 'hh' would be published unprotected: "
        "no protection step applies to it; add one to steps (e.g. cell_key) "
        'or set allow_unprotected: "<reason>" at the top level',
    ]


def test_a_release_without_a_disclosure_gate_is_refused(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace(TINY_GATES, "gates: {max_hellinger: 0.1}\n")
    with pytest.raises(ConfigError, match=r"gates \(c.yaml line \d+\): no disclosure gate is configured"):
        require_protection(_release(tmp_path, text))


def test_no_steps_and_no_gates_list_every_problem(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace("steps:\n" + CKM, "").replace(TINY_GATES, "")
    with pytest.raises(ConfigError) as info:
        require_protection(_release(tmp_path, text))
    assert len(info.value.problems) == 4  # three cubes and the gates
    assert info.value.problems[-1].startswith("gates (c.yaml line 1): no disclosure gate is configured")


def test_a_pre_tabular_swap_protects_every_cube(tmp_path: Path) -> None:
    swap = "pre_tabular:\n  - {method: random_swap, swap_columns: [region], swap_rate: 0.1, seed: 2}\n"
    text = TINY_CONFIG.replace("steps:\n" + CKM, swap)
    require_protection(_release(tmp_path, text))


def test_a_stated_reason_allows_an_unprotected_release(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace(CKM, "  - {method: identity}\n").replace(TINY_GATES, "")
    text += 'allow_unprotected: "test tabulation for the methodology unit, never disseminated"\n'
    release = _release(tmp_path, text)
    require_protection(release)
    assert release.config.allow_unprotected.startswith("test tabulation")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("steps", "additive"),
    [
        (CKM, set()),
        ("  - {method: controlled_rounding}\n", {"c1", "c2", "hh"}),
        ("  - {method: random_rounding}\n", set()),  # margins rounded on their own
        ("  - {method: random_rounding, margins: summed}\n", {"c1", "c2", "hh"}),
        (CKM.replace("}", ", cubes: [c1]}") + "  - {method: barnardisation, p: 0.2, cubes: [c2, hh]}\n", {"c2", "hh"}),
        ("  - {method: small_cell_adjustment, cubes: [c1]}\n" + CKM.replace("}", ", cubes: [c2, hh]}"), {"c1"}),
        # an identity step changes nothing: the protecting step before it decides
        ("  - {method: controlled_rounding}\n  - {method: identity, cubes: [c1]}\n", {"c1", "c2", "hh"}),
        (CKM + "  - {method: identity}\n", set()),
    ],
)
def test_the_cubes_whose_last_step_promises_additive_tables(tmp_path: Path, steps: str, additive: set[str]) -> None:
    from cubeguard.config.protection import additive_cubes

    release = _release(tmp_path, TINY_CONFIG.replace(CKM, steps))
    assert additive_cubes(release.config) == additive  # type: ignore[attr-defined]


def test_the_attack_gate_is_a_disclosure_gate(tmp_path: Path) -> None:
    text = TINY_CONFIG.replace(TINY_GATES, "gates: {max_recovered_by_attack: 0}\n")
    require_protection(_release(tmp_path, text))  # no refusal: the attack gates disclosure
