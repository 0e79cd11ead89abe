"""Rule of gbdesk issue 27: every template is validated by parsing it
(`string.Formatter().parse`: fields, conversions, format specs) and by filling it in once
with sample values under a time and size limit — before anything is written.

Generated cases: every conversion and every kind of format spec (fill and alignment, sign,
z, #, 0, width, grouping, precision, each presentation type, nested fields, nonsense) on
the slot of every probe that takes a template. A template is refused in one line, or it
makes every item's prompt.
"""

from __future__ import annotations

import time

import pytest

from gbdesk.contract import get_probe, probe_names
from gbdesk.support.errors import UserError
from gbdesk.support.guards import MAX_FILLED_CHARS
from tests.adversarial.worlds import db_state, fake_engine, run_cli  # noqa: F401

CONVERSIONS = ["", "!r", "!s", "!a", "!z", "!x", "!"]
SPECS = [
    "",
    # fill and alignment
    "<10", ">10", "^10", "=10", "*^12", "}^10", ":>5",
    # sign, z, alternate form, zero padding
    "+", "-", " ", "+d", "z", "z.2f", "#", "#x", "#o", "0", "010", "08d",
    # width
    "5", "1000", "1001", "1000000000", "9" * 20, ">" + "9" * 20,
    # grouping
    ",", "_", ",d", "_x", ",.2f",
    # precision
    ".3", ".0", ".1000", ".1001", ".99999999999999999999", ".2f", ".5s",
    # every presentation type
    *"bcdeEfFgGnosxX%",
    # nested fields and nonsense
    "{x}", ">{width}", "q", "10q", "<<", "..2", "3.", "%%", "\x00", "\u202e>5",
]  # fmt: skip


def _probes() -> list[str]:
    return [n for n in probe_names() if get_probe(n).template_slots and get_probe(n).templates]


def _template(probe_name: str, conversion: str, spec: str) -> str:
    probe = get_probe(probe_name)
    first, *others = probe.template_slots
    field = "{" + first + conversion + (f":{spec}" if spec else "") + "}"
    return "Write about " + field + "".join(" and {" + s + "}" for s in others) + "."


CASES = [("inventories", c, s) for c in CONVERSIONS for s in SPECS]
CASES += [(p, "", s) for p in _probes() if p != "inventories" for s in SPECS]
CASES += [(p, c, "") for p in _probes() if p != "inventories" for c in CONVERSIONS[1:]]


def test_every_probe_with_a_template_is_covered():
    assert {"inventories", "jobs_lum", "gest_creative", "laissez_faire"} <= set(_probes())
    assert len(CASES) >= 500


@pytest.mark.parametrize(
    ("probe_name", "conversion", "spec"),
    CASES,
    ids=[f"{p}-{c or 'none'}-{s[:12]!r}" for p, c, s in CASES],
)
def test_template_is_refused_in_one_line_or_makes_every_prompt(probe_name, conversion, spec):
    probe = get_probe(probe_name)
    template = _template(probe_name, conversion, spec)
    started = time.monotonic()
    try:
        params = probe.resolve_params(template=template)
    except UserError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 400, message
        assert time.monotonic() - started < 2, "the check itself must be quick"
        return
    if probe_name == "intersectional_filter":  # its items come from a run in a database
        return
    items = probe.items(params)
    assert items and all(len(i.prompt) <= MAX_FILLED_CHARS for i in items)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("Write about {description:d}", "Unknown format code 'd'"),
        ("Write about {description!z}", "unknown conversion !z"),
        ("Write about {description:" + "9" * 20 + "}", "asks for a width of"),
        ("Write about {description:>1000000000}", "at most 1,000"),
        ("Write about {description:.1000000000}", "asks for a precision of"),
        ("Write about {description:{x}}", "invalid format spec"),
    ],
)
def test_finding_3_run_refuses_the_template_before_writing(tmp_path, fake_engine, template, says):  # noqa: F811
    """`gbdesk run --template …` with a bad spec or conversion: one line, quickly, and
    nothing written (it used to write the model row, then fail with ValueError)."""
    from gbdesk.store import Store

    db = tmp_path / "db.sqlite"
    Store(db).close()
    before = db_state(db)
    started = time.monotonic()
    outcome = run_cli(["run", "--probe", "inventories", "--template", template, "--db", db])
    assert time.monotonic() - started < 10
    assert outcome.code == 2 and says in outcome.err, outcome.err
    outcome.check(template)
    assert db_state(db) == before
    items = run_cli(["items", "--probe", "inventories", "--template", template])
    assert items.code == 2 and says in items.err


def test_a_valid_spec_is_kept_and_used(fake_engine, tmp_path):  # noqa: F811
    db = tmp_path / "db.sqlite"
    outcome = run_cli(["run", "--probe", "inventories", "--template",
                       "Write about someone who {description!s:.40}.", "--limit", "2",
                       "--db", db, "--json"])  # fmt: skip
    assert outcome.code == 0, outcome.err
    from gbdesk.store import Store

    with Store(db) as store:
        prompts = [a["prompt"] for a in store.attempts(1)]
    assert prompts and all(p.startswith("Write about someone who ") for p in prompts)


def test_integer_slot_takes_integer_specs():
    """intersectional_sdeg fills {count} with a number: {count:d} is valid there."""
    probe = get_probe("intersectional_sdeg")
    params = probe.resolve_params(template="Describe {count:d} of {people}, {count:>3}.")
    assert probe.items(params)[0].prompt.startswith("Describe 1 of ")
    with pytest.raises(UserError, match="cannot be filled in"):
        probe.resolve_params(template="Describe {count} of {people:d}.")
