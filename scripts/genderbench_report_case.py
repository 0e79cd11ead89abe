"""Dev tool: record GenderBench 1.1.0's `calculate_normalized_table` and `section_emojis`
on fabricated results of three models (tests/fixtures/genderbench_report/normalized_case.json,
read by tests/studies/genderbench/test_genderbench_report.py).

Run with a Python >= 3.12 that has genderbench==1.1.0 installed (see
scripts/genderbench_reference.py for the venv):
    /tmp/gb/venv312/bin/python scripts/genderbench_report_case.py
and move normalized_case.json into tests/fixtures/genderbench_report/. Not used by gbdesk.
"""

import json
import math
import random

from genderbench.report_generation import report as R

SECTIONS = ["outcome_disparity", "stereotypical_reasoning", "representational_harms", "all"]


def main() -> None:
    random.seed(7)
    models = ["model-a", "model-b", "model-c"]
    exp: dict = {}
    for mi, model in enumerate(models):
        res: dict = {}
        for probe_class, metric in R.chart_config["all"] + R.chart_config["mvf"]:
            name = probe_class.__name__
            res.setdefault(name, {"metrics": {}, "marks": {}})
            lo = random.uniform(-0.4, 0.8)
            hi = lo + random.uniform(0, 0.3)
            if mi == 2 and name == "IsearProbe":
                lo = hi = float("nan")
            res[name]["metrics"][metric] = [lo, hi]
            mark = None if math.isnan(lo) else random.randint(0, 3)
            res[name]["marks"][metric] = {"mark_value": float("nan") if mark is None else mark}
        exp[model] = res
    table = R.calculate_normalized_table(exp)
    rows = {m: [None if math.isnan(v) else v for v in table.loc[m].tolist()] for m in models}
    sections = {m: {s: R.section_emojis(s, exp[m]) for s in SECTIONS} for m in models}
    record = {
        "input": json.loads(json.dumps(exp, default=str).replace("NaN", "null")),
        "columns": list(table.columns),
        "rows": rows,
        "sections": sections,
    }
    with open("normalized_case.json", "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
