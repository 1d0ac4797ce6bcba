"""The suite's durations from pytest's JUnit XML: total, per module and the slowest tests, as text.

CI keeps this beside the JUnit file in ``.ci/artifacts/`` so that a slower suite shows which module
grew (issue 36: "suite time on a clean clone not above today's").

Usage: ``python .ci/durations.py .ci/artifacts/junit.xml > .ci/artifacts/durations.txt``.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

SLOWEST = 30


def main(path: str) -> None:
    """Print the durations of the JUnit XML report at ``path``."""
    cases = [
        (c.get("classname", ""), c.get("name", ""), float(c.get("time", 0))) for c in ET.parse(path).iter("testcase")
    ]
    modules: dict[str, float] = defaultdict(float)
    for classname, _, seconds in cases:
        parts = classname.split(".")
        modules[".".join(parts[:-1] if parts[-1][:1].isupper() else parts)] += seconds  # a test class: its module
    print(f"{len(cases)} tests, {sum(s for *_, s in cases):.1f} s summed over the workers")
    print("\nper module (s):")
    for module, seconds in sorted(modules.items(), key=lambda kv: -kv[1]):
        print(f"{seconds:9.1f}  {module}")
    print(f"\nslowest {SLOWEST} tests (s):")
    for classname, name, seconds in sorted(cases, key=lambda c: -c[2])[:SLOWEST]:
        print(f"{seconds:9.1f}  {classname}::{name}")


if __name__ == "__main__":
    main(sys.argv[1])
