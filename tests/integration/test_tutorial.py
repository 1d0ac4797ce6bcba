"""The tutorial's code blocks run as written (issue 37): the demo, inspection, the attack, a flexible
table and a rerun through a Prefect deployment.

``docs/tutorial.md``'s ``bash`` blocks run in order in a folder holding a copy of ``configs/`` and the
project's ``.venv``; ``./dev demo`` runs as what it stands for (``cubeguard release configs/demo.yaml``;
the environment is installed already). A block whose first line is ``# keeps running; ready when ...``
starts in the background, and the next block runs once the URL it names answers or the text it names
is printed; the background processes are stopped at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.prefect_server import wait_for

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
READY = re.compile(r"^# keeps running; ready when (?:(https?://\S+) answers|it prints (.+))$")

pytestmark = [pytest.mark.slow, pytest.mark.prefect]


@dataclass(frozen=True)
class Step:
    """One code block of the tutorial."""

    script: str
    url: str | None = None
    text: str | None = None

    @property
    def background(self) -> bool:
        return self.url is not None or self.text is not None


def steps(markdown: str) -> list[Step]:
    """The tutorial's bash blocks, in order, each marked whether it keeps running."""
    out = []
    for block in BLOCK.findall(markdown):
        first = block.splitlines()[0]
        ready = READY.match(first)
        script = block.replace("./dev demo", ".venv/bin/cubeguard release configs/demo.yaml")
        out.append(Step(script, *(ready.groups() if ready else (None, None))))
    return out


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    yield tmp_path


def test_the_tutorial_parses_into_its_steps() -> None:
    found = steps(TUTORIAL.read_text())
    assert len(found) >= 8
    assert [s.url or s.text for s in found if s.background] == [
        "http://127.0.0.1:8000/api/release",
        "http://127.0.0.1:4200/api/health",
        "cubeguard-release/demo",
    ]
    assert found[0].script.strip() == ".venv/bin/cubeguard release configs/demo.yaml"


def test_every_code_block_of_the_tutorial_runs_as_written(folder: Path) -> None:
    for port in (8000, 4200):
        assert _port_free(port), f"port {port} is taken; the tutorial's servers need it"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", NO_COLOR="1")
    running: list[subprocess.Popen[bytes]] = []
    exports = ""
    try:
        for number, step in enumerate(steps(TUTORIAL.read_text()), start=1):
            script = exports + step.script
            exports += "".join(line + "\n" for line in step.script.splitlines() if line.startswith("export "))
            log = folder / f"step{number}.log"
            if step.background:
                with log.open("wb") as out:
                    running.append(
                        subprocess.Popen(
                            ["bash", "-euo", "pipefail", "-c", script],
                            cwd=folder,
                            env=env,
                            stdout=out,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        )
                    )
                if step.url:
                    url = step.url
                    wait_for(lambda url=url: _answers(url), f"step {number} at {url}", 300)
                else:
                    text = step.text or ""
                    wait_for(
                        lambda log=log, text=text: text in log.read_text(errors="replace"),
                        f"step {number}: {text}",
                        300,
                    )
                continue
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=folder,
                env=env,
                capture_output=True,
                timeout=900,
                check=False,
            )
            log.write_bytes(done.stdout + done.stderr)
            assert done.returncode == 0, (
                f"step {number} exited {done.returncode}:\n{step.script}\n{log.read_text()[-3000:]}"
            )
    finally:
        for proc in running:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in running:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a server slow to stop (a loaded machine): no zombie left behind
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    published = sorted(p.name for p in (folder / "work" / "demo" / "published").iterdir() if not p.name.startswith("."))
    assert len(published) == 2 and "demo-rerun" in published, published
    assert "GEO.L" in (folder / f"step{_curl_step()}.log").read_text()


def _curl_step() -> int:
    return next(i for i, s in enumerate(steps(TUTORIAL.read_text()), start=1) if "format=csv" in s.script)
