"""Adversarial tests: kills, database faults, hostile inputs."""

from __future__ import annotations


def pytest_configure(config):
    # also registered in pyproject.toml on some branches; registering twice is harmless
    config.addinivalue_line("markers", "slow: long adversarial runs; deselect with -m 'not slow'")
