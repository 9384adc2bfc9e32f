"""The worker subprocess that owns LightRAG: engine, ingestion, tool methods.

Started by `mcp_front`'s supervisor as `python -m rag_worker`; it speaks JSON-RPC 2.0
(see `protocol`) on the pipe it was given as stdin/stdout.
"""

import os

# numpy's OpenBLAS starts a thread per core for a product as small as a question against the
# vector store (2,000 x 384), and on a busy machine those threads wait for each other: 17 ms
# for a product that takes 0.2 ms on one thread (measured on 2 shared cores), in every question
# of every mode. The worker's real parallel work (the embedding model) has its own threads.
# Set before numpy loads (this package is imported first); an operator's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
