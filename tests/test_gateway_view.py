"""The one face of the gateway: the whole `Gateway` and a profile's `ScopedGateway` are both a
`GatewayView`, so the MCP face, code mode, the call policies and the dashboard work with either."""

from __future__ import annotations

import inspect

from support.registries import fast_search_settings

from toolscout.gateway import Gateway, GatewayView, ScopedGateway, view_of
from toolscout.registry.profiles import Profile
from toolscout.search import ToolSearch

MEMBERS = sorted(name for name in vars(GatewayView) if not name.startswith("_"))


_MISSING = object()


def _gateway_and_view() -> tuple[Gateway, ScopedGateway]:
    gateway = Gateway([], ToolSearch(fast_search_settings()))
    return gateway, ScopedGateway(gateway, Profile(name="desk", servers=frozenset({"weather"})))


def _mismatch(member: str, given: object) -> str | None:
    """Why `given` cannot stand for the view's `member`, or None: an attribute for an attribute;
    for a method, every parameter of the view's is there, of the same kind, and any parameter more
    has a default."""
    face = vars(GatewayView)[member]
    if given is _MISSING:
        return f"{member} is missing"
    if isinstance(face, property):
        return None if isinstance(given, property) or not callable(given) else f"{member} must be an attribute"
    if not callable(given):
        return f"{member} must be a method"
    wanted, offered = inspect.signature(face).parameters, inspect.signature(given).parameters
    for name, parameter in wanted.items():
        if name not in offered or offered[name].kind != parameter.kind:
            return f"{member}: parameter '{name}' missing or of another kind"
    extra = [name for name, p in offered.items() if name not in wanted and p.default is inspect.Parameter.empty]
    return f"{member}: parameters without a default beyond the view's: {extra}" if extra else None


def test_the_whole_gateway_and_a_profiles_view_both_offer_every_member_of_the_view() -> None:
    assert len(MEMBERS) > 10  # the protocol was read
    problems = [
        f"{type(view).__name__}.{problem}"
        for view in _gateway_and_view()
        for member in MEMBERS
        if (problem := _mismatch(member, inspect.getattr_static(view, member, _MISSING))) is not None
    ]
    assert problems == []


def test_the_whole_gateway_is_the_view_with_no_profile_and_a_profile_gives_its_own_view() -> None:
    gateway, _ = _gateway_and_view()
    assert view_of(gateway, None) is gateway
    assert gateway.profile is None and gateway.allows_server("any")

    desk = Profile(name="desk", servers=frozenset({"weather"}))
    view = view_of(gateway, desk)
    assert isinstance(view, ScopedGateway) and view.profile is desk
    assert view.allows_server("weather") and not view.allows_server("notes")
