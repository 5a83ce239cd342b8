"""Helpers the tests share, imported as modules (`from support.registries import python_server`)."""
