"""Who may use the dashboard: operator tokens only, one-time links, sessions that end, CSRF tokens
bound to their session."""

from __future__ import annotations

import pytest

from toolscout.dashboard.access import LINK_LIFETIME, SESSION_LIFETIME, Access
from toolscout.errors import AccessRefused
from toolscout.serving.clients import ClientCredential, ClientTokens

OPERATOR, AGENT, OTHER = "operator-token-0123456789", "agent-token-0123456789ab", "other-token-0123456789ab"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def access(clock: Clock) -> Access:
    single = {token: ClientTokens.single(token).clients[0].digest for token in (OPERATOR, AGENT, OTHER)}
    clients = ClientTokens((
        ClientCredential("ops", single[OPERATOR], {"operator": True}),
        ClientCredential("ide", single[AGENT], {"profile": "ide"}),
        ClientCredential("ci", single[OTHER]),
    ))
    return Access(clients, {"ops"}, clock=clock)


def test_a_sign_in_link_works_once_and_not_after_its_hour() -> None:
    clock = Clock()
    gate = access(clock)
    code = gate.new_link_code()
    assert gate.session(gate.sign_in(code).session) is not None
    with pytest.raises(AccessRefused) as used:
        gate.sign_in(code)
    assert used.value.status == 401
    late = gate.new_link_code()
    clock.now += LINK_LIFETIME + 1
    with pytest.raises(AccessRefused):
        gate.sign_in(late)


def test_only_operator_tokens_sign_in_and_others_are_told_why() -> None:
    gate = access(Clock())
    assert gate.bearer(f"Bearer {OPERATOR}").name == "ops"
    assert gate.sign_in(OPERATOR).name == "ops"
    with pytest.raises(AccessRefused) as bound:
        gate.bearer(f"Bearer {AGENT}")
    assert bound.value.status == 403 and "bound to profile 'ide'" in bound.value.message
    with pytest.raises(AccessRefused) as plain:
        gate.sign_in(OTHER)
    assert plain.value.status == 403 and "not an operator" in plain.value.message
    with pytest.raises(AccessRefused) as unknown:
        gate.bearer("Bearer not-a-token-anyone-has")
    assert unknown.value.status == 401


def test_a_session_ends_after_its_lifetime_and_at_sign_out() -> None:
    clock = Clock()
    gate = access(clock)
    first, second = gate.sign_in(OPERATOR), gate.sign_in(OPERATOR)
    gate.sign_out(first)
    assert gate.session(first.session) is None and gate.session(second.session) is not None
    clock.now += SESSION_LIFETIME + 1
    assert gate.session(second.session) is None


def test_a_csrf_token_passes_only_for_its_own_session() -> None:
    gate = access(Clock())
    first, second = gate.sign_in(OPERATOR), gate.sign_in(OPERATOR)
    script = gate.bearer(f"Bearer {OPERATOR}")
    assert gate.csrf_ok(first, gate.csrf_token(first))
    assert not gate.csrf_ok(second, gate.csrf_token(first))
    assert not gate.csrf_ok(script, gate.csrf_token(first))
    assert not gate.csrf_ok(first, "") and not gate.csrf_ok(first, None)
    assert gate.csrf_token(first) != gate.csrf_token(second)
