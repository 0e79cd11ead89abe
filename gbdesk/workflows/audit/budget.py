"""An audit's budget: `parse_budget` ("30m", "2h", "1h30m") and the seconds it keeps
for the report (`report_reserve_s`) and for the end of a step."""

from __future__ import annotations

import re

from gbdesk.support.errors import UserError, short_repr

BUDGETS = {"30m": 30 * 60, "2h": 2 * 3600, "8h": 8 * 3600}
#: the longest budget an audit plans for: a year (a longer one is a typo)
MAX_BUDGET_S = 366 * 24 * 3600
#: seconds kept for the report at the end of the budget: this share of it, within bounds
REPORT_SHARE, REPORT_MIN_S, REPORT_MAX_S = 0.04, 20.0, 120.0
#: seconds the answers under way may take to finish after the budget's end; then they are
#: dropped (the model is stopped), so that a long answer cannot overrun the budget
DRAIN_GRACE_S = 30.0
#: a step is not started with fewer seconds than this left
MIN_STEP_S = 3.0
#: share of the budget the fixed-size probes (without marks) may plan, all together
FIXED_SHARE = 0.9


def parse_budget(text: str) -> int:
    """Seconds of "30m", "2h", "8h", "1h30m", "90s" or a number of minutes."""
    t = str(text).strip().lower().replace(" ", "")
    shown = short_repr(str(text))
    if re.fullmatch(r"\d+(\.\d+)?", t):
        parts = [(t, "m")]
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|min|s)", t)
        if not parts or "".join(a + b for a, b in parts) != t:
            raise UserError(f"--budget must look like 30m, 2h, 8h or 1h30m, not {shown}")
    if any(len(v) > 12 for v, _ in parts):  # float() of 400 nines is infinity
        raise UserError(f"--budget must be at most {MAX_BUDGET_S // 3600:,}h, not {shown}")
    seconds = sum(float(v) * {"h": 3600, "m": 60, "min": 60, "s": 1}[u] for v, u in parts)
    if seconds < 1:
        raise UserError("--budget must be at least a second")
    if seconds > MAX_BUDGET_S:
        raise UserError(f"--budget must be at most {MAX_BUDGET_S // 3600:,}h, not {shown}")
    return int(seconds)


def report_reserve_s(budget_s: float) -> float:
    """Seconds kept for writing the report at the end of the budget (never more than a
    third of it)."""
    return min(REPORT_MAX_S, max(REPORT_MIN_S, REPORT_SHARE * budget_s), budget_s / 3)
