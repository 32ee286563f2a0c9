"""The DeepInfer chapter's checks: the golden lab numbers, the round-trip laws and backends, mutants and traps, the round-trip bench."""
