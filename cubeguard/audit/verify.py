"""Check an audit store: the hash chain is intact and published files still match their checksums.

Records are read one by one (a store may hold many), and every problem is collected as one
sentence that names the record's seq, so one run of ``cubeguard audit verify`` reports them all.
What the chain cannot show: a rewrite of the whole chain from some record on by someone with write
access; compare the latest hash with a copy kept elsewhere to rule that out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cubeguard.audit.errors import AuditStoreError
from cubeguard.audit.record import AuditRecord, sha256_file, tree_files
from cubeguard.audit.store import GENESIS, AuditStore, StoredRecord, chain_hash

MAX_SHOWN = 10


@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify` found: how much it checked and every problem, one sentence each."""

    records: int
    files_checked: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when the chain is intact and every published file matches."""
        return not self.problems

    def summary(self, max_shown: int = MAX_SHOWN) -> str:
        """One line when intact, else the problem count and the first ``max_shown`` problems."""
        checked = f"{self.records} record(s), {self.files_checked} published file(s) checked"
        if self.ok:
            return f"audit store intact: {checked}"
        shown = [f"  - {problem}" for problem in self.problems[:max_shown]]
        more = [f"  ... and {len(self.problems) - max_shown} more"] if len(self.problems) > max_shown else []
        return "\n".join([f"audit store has {len(self.problems)} problem(s) ({checked}):", *shown, *more])


def verify(store: AuditStore, check_files: bool = True) -> VerifyReport:
    """Check every record's link and hash, its columns, and (``check_files``) its published files.

    With ``check_files`` it also finds folders in a ``published/`` root that no record lists. A
    "published" record whose folder never appeared is no problem when a later "failed" record of the
    same run and attempt says so (the run stopped between its record and the rename).
    """
    problems = [f"the append-only trigger {name} has been dropped from the database" for name in store.missing_guards()]
    records = 0
    previous: StoredRecord | None = None
    published: dict[tuple[str, int], tuple[int, AuditRecord]] = {}  # (run, attempt) -> its publication
    for stored in store.records():
        records += 1
        problems += chain_problems(stored, previous)
        record = _parsed(stored, problems)
        if record is not None:
            problems += column_problems(stored, record)
            key = (record.run_id, record.attempt)
            if record.outcome == "failed":  # a publication this attempt recorded never became visible
                published.pop(key, None)
            elif record.outcome == "published" and record.published_path:
                published[key] = (stored.seq, record)
        previous = stored
    files = 0
    if check_files:
        for seq, record in sorted(published.values(), key=lambda item: item[0]):
            files += len(record.outputs)
            problems += file_problems(seq, str(record.published_path), record.outputs)
        problems += unlisted_problems({Path(str(r.published_path)) for _, r in published.values()})
    problems += tail_problems(previous, store.issued_seq())
    return VerifyReport(records=records, files_checked=files, problems=tuple(problems))


def unlisted_problems(listed: set[Path]) -> list[str]:
    """Release folders in the ``published/`` roots of the listed releases that no record lists."""
    problems = []
    for root in sorted({path.parent for path in listed}):
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if folder not in listed:
                problems.append(
                    f"{folder} is in published/ but no audit record lists it; it was not published by a run"
                )
    return problems


def chain_problems(stored: StoredRecord, previous: StoredRecord | None) -> list[str]:
    """A gap before ``stored``, a prev_hash that is not the previous hash, content that fails its hash."""
    problems = []
    expected = 1 if previous is None else previous.seq + 1
    if stored.seq > expected:
        problems.append(f"{_records(expected, stored.seq - 1)} missing before seq {stored.seq}")
    if previous is None and stored.prev_hash != GENESIS:
        problems.append(f"record seq {stored.seq} is first but its prev_hash is not the genesis hash (64 zeros)")
    elif previous is not None and stored.prev_hash != previous.hash:
        problems.append(
            f"the chain is broken at seq {stored.seq}: its prev_hash does not match the hash of record seq {previous.seq}"
        )
    if chain_hash(stored.prev_hash, stored.payload) != stored.hash:
        problems.append(f"record seq {stored.seq} has been altered: its content no longer matches its hash")
    return problems


def column_problems(stored: StoredRecord, record: AuditRecord) -> list[str]:
    """The run_id, attempt and created_at columns disagree with the hashed record."""
    problems = []
    if stored.created_at != record.finished_at:
        problems.append(f"record seq {stored.seq}: its created_at column does not match the time in the record")
    if stored.run_id != record.run_id:
        problems.append(f"record seq {stored.seq}: its run_id column does not match the run id in the record")
    if stored.attempt != record.attempt:
        problems.append(f"record seq {stored.seq}: its attempt column does not match the attempt in the record")
    return problems


def file_problems(seq: int, published_path: str, outputs: dict[str, str]) -> list[str]:
    """Published files missing, changed (SHA-256 differs) or added since record ``seq`` was written."""
    root = Path(published_path)
    if not root.is_dir():
        return [f"record seq {seq}: its published folder {root} is missing"]
    present = set(tree_files(root))
    problems = []
    for name, checksum in sorted(outputs.items()):
        if name not in present:
            problems.append(f"record seq {seq}: published file {root / name} is missing")
        elif sha256_file(root / name) != checksum:
            problems.append(f"record seq {seq}: published file {root / name} has changed since it was published")
    for name in sorted(present - set(outputs)):
        problems.append(f"record seq {seq}: {root / name} was added to the published folder after publication")
    return problems


def tail_problems(last: StoredRecord | None, issued: int | None) -> list[str]:
    """Records removed from the end: the store handed out seq numbers beyond the last one present."""
    last_seq = 0 if last is None else last.seq
    if issued is None or issued <= last_seq:
        return []
    return [f"{_records(last_seq + 1, issued)} missing from the end of the store"]


def _parsed(stored: StoredRecord, problems: list[str]) -> AuditRecord | None:
    """The record, or None after noting that its JSON is no longer a valid audit record."""
    try:
        return stored.record
    except AuditStoreError:
        problems.append(f"record seq {stored.seq} is not a valid audit record any more")
        return None


def _records(first: int, last: int) -> str:
    """``record seq N is`` or ``records seq N to M are``."""
    return f"record seq {first} is" if first == last else f"records seq {first} to {last} are"
