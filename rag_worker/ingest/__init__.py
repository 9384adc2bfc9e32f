"""Upload validation and text extraction: pure synchronous functions the worker runs off its loop.

An upload goes through, in order::

    validation.sanitize_filename(name)            → the clean name       (INVALID_PARAMETER)
    validation.decode_base64(content, max_bytes)  → bytes                (INVALID_PARAMETER, FILE_TOO_LARGE)
    detection.detect_format(data, name, mime)     → formats.DocFormat    (INVALID_PARAMETER, UNSUPPORTED_FORMAT,
                                                                          RESOURCE_LIMIT_EXCEEDED for zip bombs)
    metadata.validate_metadata(meta)              → normalised metadata  (INVALID_METADATA)
    isolation.extract_isolated(data, fmt, …)      → extracted.ExtractedDocument
                                                                         (EXTRACTION_FAILED, FILE_TOO_LARGE, …)

`extract_isolated` runs `extraction.extract_document` in a separate, reusable process under a time
bound, so a parser that hangs or crashes on a hostile file fails that file, not the worker.
Every failure is a `protocol.errors.RagError` whose message is safe to show the client.
Import each name from the module that defines it: this package re-exports nothing.
"""
