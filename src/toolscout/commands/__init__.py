"""One module per CLI command, each exposing `register(subparsers)`."""

# cli.py imports each command module by name; the package itself exports nothing.
__all__: list[str] = []
