"""Helpers for tests and benchmarks (never imported by a release): hand-built cubes (:mod:`.cubes`) and the EU programme's small cubes (:mod:`.eu_programme`)."""
