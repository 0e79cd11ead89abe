"""Shipped data: every dataset is indexed with its source and licence, none is GPL."""

from __future__ import annotations

import json

from gbdesk.paths import resource


def test_every_dataset_has_source_licence_and_provenance_file():
    datasets = json.loads(resource("datasets.json").read_text(encoding="utf-8"))
    assert {"laissez_faire", "name_race_rosenman2023", "name_race_census2020"} <= set(datasets)
    for key, d in datasets.items():
        path = resource(d["path"])
        assert path.exists(), key
        folder = path if path.is_dir() else path.parent
        root = resource(".").resolve()
        chain = [
            f for f in (folder.resolve(), *folder.resolve().parents) if root in (f, *f.parents)
        ]
        assert any((f / "SOURCE.md").exists() for f in chain), key
        for field in ("title", "source", "licence", "size"):
            assert d.get(field), (key, field)
        assert "GPL" not in d["licence"].replace("no GPL", ""), key


def test_no_resource_file_is_gpl_licensed():
    for path in resource(".").rglob("*"):
        if path.is_file() and path.suffix in (".md", ".txt", ""):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "GNU GENERAL PUBLIC LICENSE" not in text.upper(), path
