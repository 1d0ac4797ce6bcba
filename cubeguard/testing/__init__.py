"""Helpers for tests and benchmarks (never imported by a release): see :mod:`cubeguard.testing.cubes`."""
