"""The policies every tool call passes, in one place under `MetaTools.execute` (so a call made by
any face, a profile-bound client's included, passes them) and the audit record of every call.

In order, for execute_tool: the id resolves (withheld tools are refused), the arguments are
valid, the rate limits admit it (`rate_limits.py`), the user confirms it where the policy asks
(`confirmation.py`); only then does the call reach its upstream. Every call, refused or not, is
recorded in the audit trail (`audit.py`) and every refusal counted in /metrics.
"""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import mcp_types as types

from toolscout.errors import CallRefused, StateError, ToolCallError, UpstreamError
from toolscout.serving.audit import AuditTrail
from toolscout.serving.clients import client_name
from toolscout.serving.confirmation import Answers, Confirmation
from toolscout.serving.rate_limits import RateLimits
from toolscout.serving.request_ids import current_request_id

if TYPE_CHECKING:
    from toolscout.catalog import ToolRecord
    from toolscout.registry.spec import ServerSpec
    from toolscout.serving.metrics import GatewayMetrics
    from toolscout.serving.options import ServingOptions
    from toolscout.serving.pending_calls import PendingCalls
    from toolscout.serving.relay import ClientCaller

__all__ = ["CallPolicies", "Origin", "call_policies", "origin_of"]

logger = logging.getLogger(__name__)
_Result = TypeVar("_Result")
# Whether the call being audited passed every policy (so an upstream failure after it is the
# upstream's, not a refusal); set by `admit`, in the task of the call.
_ADMITTED: ContextVar[bool] = ContextVar("toolscout_call_admitted", default=False)
# Outcomes that are not refusals (the call ran, or failed at its upstream).
_RAN = frozenset({"ok", "error", "input_required", "failed"})


@dataclass(frozen=True)
class Origin:
    """Who made a call: the client's name, its profile, the request id."""

    client: str
    profile: str | None = None
    request_id: str | None = None


def origin_of(caller: ClientCaller | None, profile: str | None) -> Origin:
    request = getattr(caller.ctx, "request", None) if caller is not None else None
    name = client_name(request) if request is not None else None
    return Origin(name or ("anonymous" if request is not None else "stdio"), profile, current_request_id())


class CallPolicies:
    """Confirmation, rate limits and the audit trail; each optional (None: not applied)."""

    def __init__(
        self,
        confirmation: Confirmation | None = None,
        limits: RateLimits | None = None,
        audit: AuditTrail | None = None,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self.confirmation = confirmation
        self.limits = limits
        self.audit = audit
        self.on_refused = on_refused

    @property
    def pending(self) -> PendingCalls | None:
        """Where calls no client can be asked to confirm wait for an operator, if anywhere."""
        return self.confirmation.pending if self.confirmation is not None else None

    def close(self) -> None:
        if self.audit is not None and self.audit.log is not None:
            self.audit.log.state.close()

    def reconfigure(self, specs: Sequence[ServerSpec]) -> None:
        """The registry changed: its entries' confirm and limits apply from now on."""
        for policy in (self.confirmation, self.limits):
            if policy is not None:
                policy.reconfigure(specs)
        if self.audit is not None:
            self.audit.secrets = _secrets_of(specs)

    async def admit(
        self, origin: Origin, tool: ToolRecord, arguments: dict[str, Any], caller: ClientCaller | None,
        answers: Answers = (None, None),
    ) -> types.InputRequiredResult | Answers:
        """The client's answers for the upstream when `tool` may be called, or the question a
        2026-07-28 client must answer first; CallRefused saying why not, and what to do."""
        # Checked before the user is asked (no question for a call that would be refused), and
        # counted once confirmed (checked again: other calls may have come meanwhile).
        if self.limits is not None and (over := self.limits.over(origin.client, tool)) is not None:
            raise CallRefused("limited", over)
        if self.confirmation is not None:
            answers_or_question = await self.confirmation.confirmed(tool, arguments, caller, answers, client=origin.client)
            if isinstance(answers_or_question, types.InputRequiredResult):
                return answers_or_question
            answers = answers_or_question
        if self.limits is not None and (over := self.limits.admit(origin.client, tool)) is not None:
            raise CallRefused("limited", over)
        _ADMITTED.set(True)
        return answers

    async def audited(self, origin: Origin, tool: str, arguments: Any, run: Callable[[], Awaitable[_Result]]) -> _Result:
        """`run()`'s result, the call recorded with its outcome however it ended."""
        began, started = time.time(), time.perf_counter()
        outcome, detail = "failed", ""
        admitted = _ADMITTED.set(False)
        try:
            result = await run()
            outcome = _outcome_of(result)
            return result
        except CallRefused as exc:
            outcome, detail = exc.outcome, str(exc)
            raise
        except ToolCallError as exc:
            outcome, detail = "invalid", str(exc)
            raise
        except UpstreamError as exc:
            outcome, detail = "failed" if _ADMITTED.get() else "unavailable", str(exc)
            raise
        finally:
            _ADMITTED.reset(admitted)
            if outcome not in _RAN and self.on_refused is not None:
                self.on_refused(outcome)
            if self.audit is not None:
                with anyio.CancelScope(shield=True):
                    await self.audit.record(
                        client=origin.client, profile=origin.profile, tool=tool, arguments=arguments, outcome=outcome,
                        began=began, duration=time.perf_counter() - started, request_id=origin.request_id, detail=detail,
                    )


def _outcome_of(result: Any) -> str:
    if isinstance(result, types.InputRequiredResult):
        return "input_required"
    return "error" if getattr(result, "is_error", False) else "ok"


def call_policies(
    serving: ServingOptions, specs: Sequence[ServerSpec], state: str | None, metrics: GatewayMetrics | None = None,
) -> CallPolicies:
    """The policies `serve` runs with: --confirm and the entries' "confirm", the token file's and
    the entries' limits, the audit trail in the state store at `state` (None: the default; log
    lines only when the operator turned it off or the store cannot be opened), refusals counted in
    `metrics`; ConfigError if a limit is unusable. Over HTTP, where the dashboard is served, a call
    no client can be asked to confirm waits there for an operator (`pending`)."""
    from toolscout.serving.pending_calls import PendingCalls
    from toolscout.serving.rate_limits import client_limits
    from toolscout.state.audit import AuditLog, open_audit_state

    log = None
    if serving.audit_days is not None:
        try:
            log = AuditLog(open_audit_state(state))
        except StateError as exc:
            logger.warning("the audit trail is written to the log only: %s", exc)
    return CallPolicies(
        Confirmation(serving.confirm, specs, pending=PendingCalls() if serving.transport == "http" else None),
        RateLimits(client_limits(serving.clients), specs),
        AuditTrail(log, serving.audit_days or 0, full_arguments=serving.audit_arguments, secrets=_secrets_of(specs)),
        metrics.refused if metrics is not None else None,
    )


def _secrets_of(specs: Sequence[ServerSpec]) -> frozenset[str]:
    return frozenset(secret for spec in specs for secret in spec.secrets)
