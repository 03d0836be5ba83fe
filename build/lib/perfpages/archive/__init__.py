"""The run directory, the contract every later stage reads: the manifest (run.json), windows
(results.jsonl), their JSON Schemas, histograms; the writer that creates a run and the reader
that opens and verifies one; the tidy frame; diagnostics read back.
"""
