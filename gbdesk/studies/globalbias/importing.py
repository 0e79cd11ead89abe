"""GlobalBias results made elsewhere: the probes' `Importing` capabilities (no Qt). The
reading and checking is in `importers` (scored sentences, APX tables, profiles tables),
imported where a file is planned, not at the top: importers.py brings the import
workflow and the store, which importing a probe should not load."""

from __future__ import annotations

import functools
import json
from typing import Any

from gbdesk.contract import Item
from gbdesk.contract.capabilities import Importing
from gbdesk.contract.importing import read_rows
from gbdesk.studies.globalbias.data import load_names, profile_prompt_template
from gbdesk.support.guards import loads_json


def apx_importing(probe: Any, base: Importing) -> Importing:
    """Scored sentences or an APX table made elsewhere (`plan_apx_import`)."""
    return base.with_(plan=functools.partial(plan_apx, probe))


def plan_apx(
    probe: Any,
    path: Any,
    *,
    model_name: str | None = None,
    template: str | None = None,
    deal_rows: bool = False,
) -> list[Any]:
    """Scored sentences (an exported scores.csv) or an APX table computed elsewhere,
    long (`group, descriptor, template, apx`) or wide (associations.csv's `apx_1…3`)
    (`importers.plan_apx_import`). Rows are keyed by item, so `deal_rows` is unused."""
    from gbdesk.studies.globalbias.importers import plan_apx_import

    return plan_apx_import(probe, path, model_name=model_name)


def profiles_importing(probe: Any, base: Importing) -> Importing:
    """Answers (the default import) or profiles tables made elsewhere, and the items of
    exported answers that asked about several names."""
    return base.with_(
        plan=functools.partial(plan_profiles_import, probe), item=profiles_import_item
    )


def plan_profiles_import(
    probe: Any,
    path: Any,
    *,
    model_name: str | None = None,
    template: str | None = None,
    deal_rows: bool = False,
) -> list[Any]:
    """Answers with a `response` column (an exported attempts.csv, or prompt + response
    rows: the default import), else profiles in the released files' layout or as
    profiles.csv has them (`importers.plan_profiles`)."""
    from gbdesk.studies.globalbias.importers import plan_profiles
    from gbdesk.workflows.importer import plan_prompt_response_import

    rows = read_rows(path)
    if rows and any("response" in record for _, record in rows[:1]):
        return plan_prompt_response_import(
            probe, path, model_name=model_name, template=template, deal_rows=deal_rows
        )
    return plan_profiles(probe, path, model_name=model_name)


def profiles_import_item(record: dict[str, Any]) -> Item | None:
    """The item of an exported answer that asked for other names than the default
    items (several names per prompt): rebuilt from the row's `item` and `people`
    columns when they are consistent with the shipped names and the prompt."""
    key = str(record.get("item") or "").strip()
    try:
        people = loads_json(str(record.get("people") or ""))
    except ValueError:
        return None
    fields = ("name", "ethnicity", "gender", "group")
    if (
        not isinstance(people, list)
        or not people
        or not all(isinstance(p, dict) and set(p) == set(fields) for p in people)
    ):
        return None
    shipped = {(n["firstname"], n["Ethnicity"], n["Gender"], n["Group"]) for n in load_names()}
    if any(tuple(p[f] for f in fields) not in shipped for p in people):
        return None
    first = people[0]
    suffix = f"+{len(people) - 1}" if len(people) > 1 else ""
    rows = [
        n["row"]
        for n in load_names()
        if n["firstname"] == first["name"] and n["Group"] == first["group"]
    ]
    if key not in {f"p{row}-{first['name']}{suffix}" for row in rows}:
        return None
    prompt = profile_prompt_template().replace(
        "{list_of_names}", json.dumps([p["name"] for p in people])
    )
    return Item(key=key, prompt=prompt, metadata={"people": people})
