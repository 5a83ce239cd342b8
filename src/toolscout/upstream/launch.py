"""Launching a stdio upstream: the environment it runs in and the program it runs.

    env = upstream_environment(spec)      # the allowlisted environment, trust defaults, the entry's env
    program = resolve_command(spec)       # absolute path of spec.command, found on that PATH
"""

from __future__ import annotations

import os
import shutil
import ssl
import sys
from collections.abc import Mapping
from pathlib import Path

from toolscout.errors import ConfigError
from toolscout.registry.spec import ServerSpec

__all__ = ["INHERITED_PREFIXES", "INHERITED_VARIABLES", "resolve_command", "system_ca_bundle", "upstream_environment"]

# An upstream inherits these of the gateway's variables and nothing else: enough to find
# programs, reach package indexes through proxies and TLS inspection, and write caches;
# never the gateway's own credentials (API keys, cloud tokens) or its virtualenv.
INHERITED_VARIABLES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "TMPDIR", "TEMP", "TMP",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
    "NIX_SSL_CERT_FILE", "GIT_SSL_CAINFO",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_CERT", "PIP_CLIENT_CERT",
    "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_DEFAULT_TIMEOUT",
    "UV_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS",
    "UV_NATIVE_TLS", "UV_SYSTEM_CERTS", "UV_INSECURE_HOST", "UV_HTTP_TIMEOUT", "UV_CACHE_DIR", "UV_TOOL_DIR",
    "UV_PYTHON", "UV_PYTHON_INSTALL_DIR", "UV_PYTHON_DOWNLOADS", "UV_OFFLINE",
    "NPM_CONFIG_REGISTRY", "NPM_CONFIG_CAFILE", "NPM_CONFIG_CACHE", "NPM_CONFIG_STRICT_SSL",
    "npm_config_registry", "npm_config_cafile", "npm_config_cache", "npm_config_strict_ssl",
    # Windows: programs fail in odd ways without these.
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "USERNAME",
    "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES",
    "PROGRAMFILES(X86)", "PROGRAMW6432", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS", "OS",
})
INHERITED_PREFIXES = ("LC_", "XDG_")


# Hosts (Claude Desktop, the SDK's stdio client) start toolscout with a minimal environment, so the
# variables naming a TLS-inspecting network's CA bundle are often missing. The operating system's
# trust store has that CA, though, so package runners are pointed at it unless told otherwise:
# uv >= 0.13 reads UV_SYSTEM_CERTS, earlier uv UV_NATIVE_TLS (newer uv warns when only that is set);
# Node.js adds NODE_EXTRA_CA_CERTS to its own roots. (Node 20 rejects --use-system-ca, and
# --use-openssl-ca would replace Node's roots with a store that official builds may not find, so
# NODE_OPTIONS is left alone.)
_UV_SYSTEM_CERTS = ("UV_SYSTEM_CERTS", "UV_NATIVE_TLS")
_SYSTEM_CA_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Alpine, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL
    "/etc/ssl/ca-bundle.pem",  # openSUSE
    "/etc/ssl/cert.pem",  # macOS, BSDs
)


def system_ca_bundle() -> str | None:
    """A file with the system's trusted CA certificates (SSL_CERT_FILE, else a well-known place)."""
    candidates = [os.environ.get("SSL_CERT_FILE"), ssl.get_default_verify_paths().cafile, *_SYSTEM_CA_BUNDLES]
    return next((path for path in candidates if path and os.path.isfile(path)), None)


def _trust_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """What makes package runners trust the system's certificates, where nothing says otherwise."""
    defaults = {}
    if not any(name in env for name in _UV_SYSTEM_CERTS):
        defaults = dict.fromkeys(_UV_SYSTEM_CERTS, "1")
    bundle = system_ca_bundle()
    if "NODE_EXTRA_CA_CERTS" not in env and bundle:
        defaults["NODE_EXTRA_CA_CERTS"] = bundle
    return defaults


def upstream_environment(spec: ServerSpec) -> dict[str, str]:
    """The complete environment of a stdio upstream: the allowlist above, system-certificate
    defaults for uv and Node.js, then the entry's env."""
    windows = sys.platform == "win32"
    allowed = {n.upper() for n in INHERITED_VARIABLES} if windows else INHERITED_VARIABLES
    env = {
        name: value
        for name, value in os.environ.items()
        if (name.upper() if windows else name) in allowed or name.startswith(INHERITED_PREFIXES)
    }
    # uvx/npx installed next to the gateway's interpreter (its venv's bin) must be found even
    # when that venv is not activated. Appended, not prepended: the venv's `python` must not
    # shadow the one an upstream entry means.
    own_bin = os.path.dirname(sys.executable)
    path_key = next((k for k in env if k.upper() == "PATH"), "PATH") if windows else "PATH"
    parts = [p for p in env.get(path_key, "").split(os.pathsep) if p]
    if own_bin and own_bin not in parts:
        parts.append(own_bin)
    env[path_key] = os.pathsep.join(parts)
    env.update(_trust_defaults({**env, **spec.env}))
    env.update(spec.env)
    return env


_INSTALL_HINTS = {
    "uvx": "install uv (pip install uv, or see https://docs.astral.sh/uv/)",
    "uv": "install uv (pip install uv, or see https://docs.astral.sh/uv/)",
    "npx": "install Node.js, which ships npx (https://nodejs.org)",
    "node": "install Node.js (https://nodejs.org)",
    "docker": "install Docker (https://docs.docker.com/get-docker/)",
}


def resolve_command(spec: ServerSpec) -> str:
    """The absolute path of the program a stdio upstream runs, searched on its own PATH."""
    if not spec.command:
        raise ConfigError(f"server '{spec.name}' ({spec.source}) has no command to run")
    env = upstream_environment(spec)
    path = next((v for k, v in env.items() if k.upper() == "PATH"), "")
    command = spec.command
    if os.sep in command or (os.altsep and os.altsep in command):
        base = Path(spec.cwd) if spec.cwd else Path.cwd()
        candidate = base / os.path.expanduser(command)
        found = shutil.which(str(candidate))
    else:
        found = shutil.which(command, path=path)
    if found is None:
        hint = _INSTALL_HINTS.get(Path(command).stem.lower(), "install it or fix 'command'")
        raise ConfigError(
            f"server '{spec.name}' ({spec.source}): command '{command}' not found on the "
            f"upstream PATH; {hint}"
        )
    return os.path.abspath(found)
