"""OAuth 2.1 sign-in to remote upstreams, with the MCP SDK's client: where tokens are kept
(`tokens`), the SDK's provider set up for the gateway and for `toolscout login` (`provider`), and
the interactive sign-in with its loopback redirect receiver (`login`)."""

__all__: list[str] = []
