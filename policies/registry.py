"""Policies looked up by name, registered once, exposed read-only."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from types import MappingProxyType

from criss.errors import ConfigError
from criss.policies.benefit import BenefitModel, CrissBenefit, LruBenefit, RecyclerBenefit

_FACTORIES: dict[str, Callable[[], BenefitModel]] = {
    "criss": CrissBenefit,
    "recycler": RecyclerBenefit,
    "lru": LruBenefit,
}
registry = MappingProxyType(_FACTORIES)


def register_policy(
    name: str, factory: Callable[[], BenefitModel], *, clobber: bool = False
) -> None:
    """Add a benefit model under ``name``; refuses to replace one unless ``clobber``."""
    if name in _FACTORIES and not clobber:
        raise ConfigError(f"a policy named {name!r} is already registered (pass clobber=True)")
    _FACTORIES[name] = factory


def available_policies() -> list[str]:
    return sorted(_FACTORIES)


def get_policy(name: str | BenefitModel) -> BenefitModel:
    """The benefit model called ``name`` (a model object is returned as it is)."""
    if not isinstance(name, str):
        return name
    try:
        return _FACTORIES[name]()
    except KeyError:
        close = difflib.get_close_matches(name, _FACTORIES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown policy {name!r}{hint} Available: {', '.join(available_policies())}"
        ) from None
