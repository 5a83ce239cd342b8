"""Fine-tuning toolscout's tool-retrieval embedding model (needs the `toolscout[train]` extra)."""

# commands/train_model.py imports the modules it needs by name; the package exports nothing.
__all__: list[str] = []
