"""Fine-tuning toolscout's tool-retrieval embedding model (needs the `toolscout[train]` extra)."""
