"""The stereotype dataset pipeline headless on the bundled model (SmolLM2-135M) through
gbdesk's worker: build (elicit + filter) for three groups, three validators' decisions from
CSV files, Fleiss' κ as statsmodels computes it, the paper-faithful examination. Short
generation limits keep it to a few minutes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

# a few minutes alone; on a shared, busy 2-core machine much longer
pytestmark = [pytest.mark.model, pytest.mark.timeout(3000)]

VALIDATORS = ("ana", "bo", "cy")


def gbdesk(*args, timeout=2400):
    result = subprocess.run(
        [sys.executable, "-m", "gbdesk", *args], capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def decision(validator: int, k: int, first: bool) -> tuple[str, str]:
    """Varied decisions (on every other stereotype, one validator says no, another b); the
    first stereotype in the dataset is kept by all three, so the examination has something
    to ask."""
    if first:
        return "yes", "a"
    return ("no" if (k + validator) % 3 == 0 else "yes"), ("b" if validator == k % 3 else "a")


def test_dataset_pipeline_on_the_bundled_model(tmp_path):
    db = str(tmp_path / "model.sqlite")
    built = gbdesk(
        "dataset", "build", "--groups", "White;women", "Black;men;young", "Asian;women;Muslim",
        "--model", "default", "--max-stereotypes", "1", "--max-tokens", "100",
        "--filter-max-tokens", "40", "--db", db, "--json",
    )  # fmt: skip
    assert set(built) >= {"dataset_id", "groups", "stereotypes", "filtered_out"}
    assert built["stereotypes"] >= 1
    dataset = str(built["dataset_id"])
    exported = tmp_path / "dataset.csv"
    gbdesk("dataset", "export", dataset, "--file", str(exported), "--db", db, "--json")
    with exported.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == built["stereotypes"]
    assert all(r["elicited_by"].startswith("SmolLM2") for r in rows)  # provenance
    in_dataset = [r["stereotype_id"] for r in rows if r["status"] != "out"]
    if not in_dataset:
        pytest.skip("the 135M model's filter moved every stereotype out of the dataset")

    table = []
    for v, name in enumerate(VALIDATORS):
        path = tmp_path / f"{name}.csv"
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["stereotype_id", "common", "specific"])
            for k, row in enumerate(rows):
                sid = row["stereotype_id"]
                writer.writerow([sid, *decision(v, k, sid == in_dataset[0])])
        stored = gbdesk("dataset", "validate", dataset, "--file", str(path), "--validator",
                        name, "--db", db, "--json")  # fmt: skip
        assert stored["stored"] == len(rows)
    for k, row in enumerate(rows):
        if row["stereotype_id"] in in_dataset:
            first = row["stereotype_id"] == in_dataset[0]
            table.append([decision(v, k, first) for v in range(len(VALIDATORS))])

    agreement = gbdesk("dataset", "agreement", dataset, "--db", db, "--json")
    for index, name in enumerate(("commonality", "group_specificity")):
        answers = np.array([[d[index] for d in unit] for unit in table])
        counts, _ = aggregate_raters(answers)
        figures = agreement[name]
        assert figures["validators"] == 3 and figures["stereotypes_rated"] == len(table)
        if len(np.unique(answers)) > 1:
            expected = fleiss_kappa(counts, method="fleiss")
            assert figures["fleiss_kappa"] == pytest.approx(expected, abs=1e-12)
        else:  # one answer throughout: κ is undefined (statsmodels gives nan), said why
            assert np.isnan(fleiss_kappa(counts, method="fleiss"))
            assert figures["fleiss_kappa"] is None and figures["fleiss_kappa_reason"]
        positive = "yes" if index == 0 else "a"
        majority = sum(1 for unit in answers if (unit == positive).sum() >= 2) / len(answers)
        assert figures["share_majority"] == pytest.approx(majority)

    run = gbdesk(
        "run", "--probe", "intersectional_sdeg", "--set", f"dataset={dataset}", "--set",
        "design=paper", "--attempts", "2", "--max-tokens", "24", "--db", db, "--json",
    )  # fmt: skip
    assert run["status"] == "done"
    metrics = gbdesk("metrics", str(run["run_id"]), "--db", db, "--json")["metrics"]
    assert 0 <= metrics["sdeg_overall"]["value"] < 1
    groups = [k for k in metrics if k.startswith("sdeg_group/")]
    assert groups and all(0 <= metrics[k]["value"] < 1 for k in groups)
    pdf = tmp_path / "report.pdf"
    result = subprocess.run(
        [sys.executable, "-m", "gbdesk", "export", str(run["run_id"]), "--pdf", str(pdf),
         "--db", db],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    from pypdf import PdfReader

    text = " ".join(" ".join(p.extract_text().split()) for p in PdfReader(pdf).pages)
    assert "design 'paper'" in text and "Fleiss" in text and "reconstruction" in text
