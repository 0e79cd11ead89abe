"""Dev tool: record GenderBench 1.1.0's `calculate_normalized_table` and `section_emojis`
on fabricated results of three models (tests/fixtures/genderbench_report/normalized_case.json,
read by tests/test_genderbench_report.py).

Run with a Python >= 3.12 that has genderbench==1.1.0 installed (see
scripts/genderbench_reference.py for the venv):
    /tmp/gb/venv312/bin/python scripts/genderbench_report_case.py
and move normalized_case.json into tests/fixtures/genderbench_report/. Not used by gbdesk.
"""
import json, math, random
from genderbench.report_generation import report as R

random.seed(7)
models = ["model-a", "model-b", "model-c"]
exp = {}
for mi, model in enumerate(models):
    res = {}
    for probe_class, metric in R.chart_config["all"] + R.chart_config["mvf"]:
        name = probe_class.__name__
        res.setdefault(name, {"metrics": {}, "marks": {}})
        lo = random.uniform(-0.4, 0.8); hi = lo + random.uniform(0, 0.3)
        if mi == 2 and name == "IsearProbe":
            lo = hi = float("nan")
        res[name]["metrics"][metric] = [lo, hi]
        mark = None if math.isnan(lo) else random.randint(0, 3)
        res[name]["marks"][metric] = {"mark_value": mark if mark is not None else float("nan")}
    exp[model] = res
table = R.calculate_normalized_table(exp)
rows = {m: [None if math.isnan(v) else v for v in table.loc[m].tolist()] for m in models}
sections = {m: {s: R.section_emojis(s, exp[m]) for s in ["outcome_disparity", "stereotypical_reasoning", "representational_harms", "all"]} for m in models}
def enc(o):
    if isinstance(o, float) and math.isnan(o): return None
    return o
json.dump({"input": json.loads(json.dumps(exp, default=str).replace("NaN", "null")), "columns": list(table.columns), "rows": rows, "sections": sections}, open("normalized_case.json", "w"), indent=1, ensure_ascii=False)
print(list(table.columns)[:3], rows["model-c"][-5:], sections["model-a"])
