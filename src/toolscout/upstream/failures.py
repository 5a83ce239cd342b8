"""Why an upstream failed to start, and whether starting it again can help.

A *configuration error* is one that only a person can fix: a command that is not installed, an
entry that would start toolscout itself, credentials the server rejects (HTTP 401/403), an
endpoint that does not exist (HTTP 404), a certificate that does not verify, a URL that is not
one. Such an upstream fails at once and is not retried; its reason names the cause and the
registry setting to change. Everything else (a crash, a timeout, a refused connection) is
transient: worth retrying, and an agent may try again later.

    failure = classify_start_failure(exc, spec, http_status=last_error_status)
    failure.reason           # e.g. "rejected the credentials (HTTP 401): check headers.Authorization ..."
    failure.configuration    # True: a configuration error, do not retry

`toolscout.errors.UpstreamConfigurationError` is the exception for such a failure: raised where
toolscout finds one itself and by a call to an upstream that is down for one.
`is_configuration_error(exc)` tells any exception apart; an `Upstream` whose start failed for one
has `configuration_error` set (the supervisor in `pool.py` then stops).

`unavailable(status)` is what a call to an upstream that is not up is answered with, at once: its
state in words a person can act on (down until a given time, waiting for a sign-in with the exact
`toolscout login` command, misconfigured with the setting to change, still starting).
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolscout.errors import ConfigError, UpstreamConfigurationError, UpstreamError
from toolscout.upstream.status import State, UpstreamStatus, describe_failure

if TYPE_CHECKING:
    from toolscout.registry.spec import ServerSpec

__all__ = [
    "CONFIGURATION_NOTE",
    "StartFailure",
    "classify_start_failure",
    "http_status_failure",
    "is_configuration_error",
    "unavailable",
]

# Appended to the reason of an upstream that is down for a configuration error.
CONFIGURATION_NOTE = "a configuration error: not retried until the entry changes"


@dataclass(frozen=True)
class StartFailure:
    """Why one start attempt failed, in words that name what to fix."""

    reason: str
    # True: a configuration error; retrying cannot help, only a changed entry can.
    configuration: bool = False


def is_configuration_error(exc: BaseException) -> bool:
    """Whether `exc` (or the first of an exception group) is a configuration error: do not retry."""
    return _configuration_reason(_first(exc)) is not None


def unavailable(status: UpstreamStatus, *, waited: float | None = None, now: float | None = None) -> UpstreamError:
    """The error for a call to the upstream of `status`, which is not up; `waited`: seconds the
    call waited for a start under way that has not finished."""
    reason = status.reason or "not connected"
    if status.needs_sign_in:
        why = reason.removeprefix("failed to start: ")
        return UpstreamError(status.name, f"not available (waiting for a sign-in): {why}", transient=False)
    if status.configuration_error:
        why = reason.removeprefix("failed to start: ")
        return UpstreamConfigurationError(status.name, f"not available (misconfigured): {why}")
    if status.state is State.STARTING:
        waited_for = f"; waited {waited:g} s for it" if waited else ""
        return UpstreamError(status.name, f"not available (still starting: a start is under way{waited_for})")
    if status.gave_up:
        return UpstreamError(status.name, f"not available (down, no longer tried: {reason})", transient=False)
    return UpstreamError(status.name, f"not available (down: {reason}){_next_attempt(status.next_attempt, now)}")


def _next_attempt(at: float | None, now: float | None) -> str:
    if at is None:
        return "; it is being tried again now"
    seconds = max(0, round(at - (time.time() if now is None else now)))
    return f"; next attempt in {seconds} s (at {time.strftime('%H:%M:%S', time.gmtime(at))} UTC)"


def classify_start_failure(exc: BaseException, spec: ServerSpec, *, http_status: int | None = None) -> StartFailure:
    """The reason a start attempt failed with `exc`; `http_status`: the last HTTP error status an
    HTTP upstream answered during the attempt (the SDK turns it into a generic error)."""
    first = _first(exc)
    http_status = http_status or _raised_status(first)
    if http_status is not None and spec.transport != "stdio":
        failure = http_status_failure(http_status, spec)
        if failure is not None:
            return failure
    reason = _configuration_reason(first)
    if reason is not None:
        return StartFailure(reason, configuration=True)
    if spec.transport != "stdio" and _is_tls_failure(first):
        return StartFailure(
            f"the TLS certificate of {spec.url} did not verify ({_tls_detail(first)}): check 'url' of server "
            f"'{spec.name}' in {spec.source}, or make the issuing CA trusted (SSL_CERT_FILE)",
            configuration=True,
        )
    if spec.transport != "stdio" and _is_malformed_url(first):
        return StartFailure(
            f"'{spec.url}' is not a usable URL ({describe_failure(first)}): fix 'url' of server '{spec.name}' "
            f"in {spec.source}",
            configuration=True,
        )
    if spec.transport != "stdio" and _is_connect_failure(first):
        # Transient (the server may be starting), but the bare library message names no address.
        return StartFailure(
            f"cannot connect to {spec.url} ({describe_failure(first)}): check that the server is running "
            f"there, or 'url' of server '{spec.name}' in {spec.source}"
        )
    return StartFailure(describe_failure(first))


def http_status_failure(status: int, spec: ServerSpec) -> StartFailure | None:
    """The configuration error an HTTP status means for an upstream that has not started, or None."""
    where = f"of server '{spec.name}' in {spec.source}"
    header = _auth_header(spec)
    if status == 401:
        fix = (f"check headers.{header} {where}" if header
               else f"add headers.Authorization (e.g. \"Bearer ${{TOKEN}}\") {where}")
        return StartFailure(f"rejected the credentials (HTTP 401): {fix}", configuration=True)
    if status == 403:
        fix = (f"check that the credentials in headers.{header} {where} may use this server" if header
               else f"add credentials in headers.Authorization {where}")
        return StartFailure(f"refused access (HTTP 403): {fix}", configuration=True)
    if status == 404:
        return StartFailure(
            f"has no MCP endpoint at {spec.url} (HTTP 404): check 'url' {where} (it usually ends in /mcp)",
            configuration=True,
        )
    if status in (405, 410):
        return StartFailure(
            f"does not serve MCP at {spec.url} (HTTP {status}): check 'url' {where}", configuration=True
        )
    return None


def _raised_status(exc: BaseException) -> int | None:
    """The status of an HTTP error response raised as an exception (the SSE transport does)."""
    import httpx2

    for error in _chain(exc):
        if isinstance(error, httpx2.HTTPStatusError):
            return error.response.status_code
    return None


def _first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _configuration_reason(exc: BaseException) -> str | None:
    if isinstance(exc, UpstreamConfigurationError):
        return exc.detail
    if isinstance(exc, ConfigError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"not allowed to run: {exc.filename or exc}"
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _is_tls_failure(exc: BaseException) -> bool:
    return any(
        isinstance(e, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(e) for e in _chain(exc)
    )


def _tls_detail(exc: BaseException) -> str:
    for e in _chain(exc):
        if isinstance(e, ssl.SSLCertVerificationError) and e.verify_message:
            return str(e.verify_message)
    return "certificate verify failed"


def _is_connect_failure(exc: BaseException) -> bool:
    import httpx2

    return isinstance(exc, httpx2.ConnectError)


def _is_malformed_url(exc: BaseException) -> bool:
    import httpx2

    return isinstance(exc, (httpx2.InvalidURL, httpx2.UnsupportedProtocol))


def _auth_header(spec: ServerSpec) -> str | None:
    """The header of the entry that carries its credentials, as the entry spells it."""
    for name in spec.headers:
        if name.lower() in ("authorization", "x-api-key", "api-key", "x-auth-token"):
            return name
    return None
