from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory, monkeypatch):
    """Never touch the user's real gbdesk database."""
    data = tmp_path_factory.mktemp("gbdesk-data")
    monkeypatch.setenv("GBDESK_DATA_DIR", str(data))
    monkeypatch.delenv("GBDESK_DB", raising=False)


@pytest.fixture
def store(tmp_path):
    from gbdesk.store import Store

    s = Store(tmp_path / "test.sqlite")
    yield s
    s.close()
