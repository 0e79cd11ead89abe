"""Probe-specific result views shown below the metric plots (registry, imported lazily)."""

from __future__ import annotations

import importlib

RESULT_VIEWS = {
    "laissez_faire": "gbdesk.ui.laissez_faire_views:CharacterResultsView",
    "globalbias_apx": "gbdesk.ui.globalbias_views:AssociationsView",
    "globalbias_profiles": "gbdesk.ui.globalbias_views:ProfileResultsView",
    "intersectional_sdeg": "gbdesk.ui.intersectional_views:SDegResultsView",
}


def result_view_for(probe_name: str):
    """The widget class for a probe's extra results, or None."""
    target = RESULT_VIEWS.get(probe_name)
    if target is None:
        return None
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)
