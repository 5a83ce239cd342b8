"""One module per CLI command, each exposing `register(subparsers)`."""
