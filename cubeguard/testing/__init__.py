"""Helpers for tests and benchmarks, never imported by a release.

:mod:`.cubes` hand-built cubes; :mod:`.tiny` the tiny release's config and microdata;
:mod:`.eu_programme` the EU programme's small cubes; :mod:`.bad_inputs` the spoiled inputs every
error message is checked against; :mod:`.browser` Debian's Chromium under Playwright. Benchmarks import these instead of ``tests/``.
"""
