"""The key store: what a flexible-table query needs of a release, in memory-mappable columns.

One ``.npy`` file per microdata column a table may cross (dictionary indices, ``uint16``), one per
population (membership, ``uint8``), one per numeric column whose means may be shown (``float64``),
and the record keys as the exact ``uint64`` numerators the cubes were summed from
(``cubeguard.ckm.keys``); ``meta.json``, written last, lists them with each column's dictionary.
The codes are those after the pre-tabular steps, the keys those of the published cubes, so a
table tabulated from here has the cubes' counts and cell keys. The store is internal: record
keys are secret.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from cubeguard.ckm.keys import KeyScale
from cubeguard.cubes.encode import population_mask
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.cubes.values import whole_numbers
from cubeguard.errors import CubeguardError

FORMAT = 2
META = "meta.json"
MAX_CATEGORIES = 2**16 - 1  # the last uint16 index is kept for missing values
Raw = str | int


@dataclass(frozen=True)
class KeyColumn:
    """A crossable column: each record's index into ``dictionary`` (its raw values)."""

    name: str
    dictionary: tuple[Raw | None, ...]
    codes: npt.NDArray[np.uint16]


@dataclass(frozen=True)
class KeyStore:
    """An opened key store (arrays memory-mapped read-only)."""

    folder: Path
    records: int
    key_scale: KeyScale
    source_hash: str
    columns: dict[str, KeyColumn]
    populations: dict[str, npt.NDArray[np.uint8] | None]  # None: every record belongs
    values: dict[str, npt.NDArray[np.float64]]
    keys: npt.NDArray[np.uint64]

    @classmethod
    def open(cls, folder: Path) -> KeyStore:
        """Open the store in ``folder``; a store without ``meta.json`` was never finished."""
        try:
            meta = json.loads((folder / META).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CubeguardError(
                f"no finished key store in {folder}; rerun the release (its config needs 'tables')"
            ) from None
        if meta.get("format") != FORMAT:
            raise CubeguardError(f"the key store in {folder} has format {meta.get('format')}; rerun the release")

        def load(name: str) -> Any:
            return np.load(folder / f"{name}.npy", mmap_mode="r")

        return cls(
            folder=folder,
            records=int(meta["records"]),
            key_scale=KeyScale.from_label(meta["key_scale"]),
            source_hash=str(meta["source_hash"]),
            columns={c: KeyColumn(c, tuple(d), load(f"column.{c}")) for c, d in meta["columns"].items()},
            populations={
                p: load(f"population.{p}") if kind == "mask" else None for p, kind in meta["populations"].items()
            },
            values={v: load(f"values.{v}") for v in meta["values"]},
            keys=load("keys"),
        )


class KeyStoreWriter:
    """Collects record batches, then writes the store (replacing ``folder``) in :meth:`finish`."""

    def __init__(
        self,
        columns: Iterable[str],
        populations: dict[str, PopulationSpec],
        household_ref: str | None,
        values: Iterable[str],
        key_column: str,
        key_scale: KeyScale,
    ) -> None:
        self.populations = populations
        self.household_ref = household_ref
        self.key_column = key_column
        self.key_scale = key_scale
        self._codes: dict[str, list[npt.NDArray[np.uint16]]] = {c: [] for c in columns}
        self._dicts: dict[str, dict[Raw | None, int]] = {c: {} for c in self._codes}
        # a population of all persons needs no mask (every record belongs): one read less per query
        self._masks: dict[str, list[npt.NDArray[np.uint8]]] = {
            p: [] for p, spec in populations.items() if spec.where or spec.unit != "persons"
        }
        self._values: dict[str, list[npt.NDArray[np.float64]]] = {v: [] for v in values}
        self._keys: list[npt.NDArray[np.uint64]] = []

    @property
    def needs(self) -> list[str]:
        """Microdata columns a batch must hold."""
        cols = set(self._codes) | set(self._values) | {self.key_column}
        for pop in self.populations.values():
            cols |= set(pop.where)
            if pop.unit == "households" and self.household_ref:
                cols.add(self.household_ref)
        return sorted(cols)

    def add(self, batch: pa.RecordBatch) -> None:
        """Append one batch of records."""
        for name, parts in self._codes.items():
            parts.append(self._encode(name, batch.column(name)))
        for name in self._masks:
            pop = self.populations[name]
            ref = self.household_ref if pop.unit == "households" else None
            self._masks[name].append(population_mask(batch, pop.where, ref).astype(np.uint8))
        for name, vals in self._values.items():
            vals.append(whole_numbers(name, batch.column(name), "of tables.means", " or drop the mean"))
        keys = batch.column(self.key_column).to_numpy(zero_copy_only=False)
        self._keys.append(self.key_scale.to_fixed(keys))

    def _encode(self, name: str, column: pa.Array) -> npt.NDArray[np.uint16]:
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        known = self._dicts[name]
        lut = np.array([known.setdefault(v, len(known)) for v in encoded.dictionary.to_pylist()], dtype=np.int64)
        if len(known) > MAX_CATEGORIES:
            raise CubeguardError(
                f"column {name!r} has more than {MAX_CATEGORIES:,} distinct values; offer no breakdown of it in tables"
            )
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        return lut[indices].astype(np.uint16) if lut.size else np.zeros(len(column), dtype=np.uint16)

    def finish(self, folder: Path, source_hash: str) -> Path:
        """Write every array, then ``meta.json``; return ``folder``."""
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for name, parts in self._codes.items():
            _save(folder / f"column.{name}.npy", parts, np.uint16)
        for name, masks in self._masks.items():
            _save(folder / f"population.{name}.npy", masks, np.uint8)
        for name, vals in self._values.items():
            _save(folder / f"values.{name}.npy", vals, np.float64)
        _save(folder / "keys.npy", self._keys, np.uint64)
        meta = {
            "format": FORMAT,
            "records": int(sum(k.size for k in self._keys)),
            "key_scale": self.key_scale.label,
            "source_hash": source_hash,
            "columns": {c: list(d) for c, d in self._dicts.items()},
            "populations": {p: "mask" if p in self._masks else "all" for p in sorted(self.populations)},
            "values": sorted(self._values),
        }
        (folder / META).write_text(json.dumps(meta), encoding="utf-8")
        return folder


def source_hash(config: BaseModel) -> str:
    """What the store's content depends on: the whole config but its ``tables`` rules, output and SDMX names.

    Serving checks it, so rules may change after a release but classifications, populations,
    input and steps may not.
    """
    data = config.model_dump(mode="json", exclude={"tables", "output", "description", "sdmx"})
    for cube in data.get("hypercubes", []):  # key stores written before cubes had sums keep their hash
        if not cube.get("sums", True):
            del cube["sums"]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _save(path: Path, parts: list[Any], dtype: type) -> None:
    np.save(path, np.concatenate(parts) if parts else np.empty(0, dtype=dtype))
