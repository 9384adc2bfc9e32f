"""What the tool methods do, one concern a module: indexing, batches, deletion, listing, queries, caches, quotas, audit, diagnostics."""
