"""Retrievers and the text they index. Nothing here imports the MCP SDK."""

# The seam every retriever implements; the retrievers themselves are imported from their modules
# (dense.py loads onnxruntime, so importing the package stays light).
from toolscout.index.base import NOT_RETRIEVED, Encoder, Query, Retrieval, Retriever

__all__ = ["NOT_RETRIEVED", "Encoder", "Query", "Retrieval", "Retriever"]
