"""The contract's old import paths, kept as thin deprecated aliases for third-party studies.

`gbdesk.studies`, `gbdesk.studies.base`, `gbdesk.studies.capabilities` and
`gbdesk.studies.importing` once held the contract; each now gives the names it gave then,
each with a `DeprecationWarning` that names the module to import it from
(`gbdesk.contract`, or the `gbdesk.contract` module that defines a name it does not
export), and nothing private.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any


def old_path(
    old: str, homes: dict[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's `__getattr__` and `__dir__` that give `homes`' names (module -> names)
    with a warning, and raise AttributeError for any other name (so that a package's
    submodules still import)."""
    where = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} is deprecated: import it from {module}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__
