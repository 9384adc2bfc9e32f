"""Where knowledge bases live: LightRAG instances, storage placement and errors, our document catalog, journals."""
