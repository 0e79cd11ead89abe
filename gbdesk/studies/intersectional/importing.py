"""Intersectional SDeg role answers made elsewhere or exported (answers.csv): the probe's
`Importing` capability (no Qt). The reading and checking is `importer.plan_role_answers`."""

from __future__ import annotations

import functools
from typing import Any

from gbdesk.contract import Probe
from gbdesk.contract.capabilities import Importing


def importing(probe: Probe, base: Importing) -> Importing:
    """The probe's `Importing`: role answers made elsewhere or exported (answers.csv)."""
    return base.with_(plan=functools.partial(plan_import, probe))


def plan_import(
    probe: Probe,
    path: Any,
    *,
    model_name: str | None = None,
    template: str | None = None,
    deal_rows: bool = False,
) -> list[Any]:
    """`plan_role_answers`: rows are keyed by group and role, so `deal_rows` is unused.
    Imported here, not at the top: importer.py brings the import workflow and the store,
    which importing the probe should not load."""
    from gbdesk.studies.intersectional.importer import plan_role_answers

    return plan_role_answers(probe, path, model_name=model_name, template=template)
