"""The DeepInfer chapter's checks: the golden lab numbers, the round-trip laws and backends, mutants and traps, the round-trip bench.

Modules (held against the folder by ``stateful_tests/tests/test_rooms.py``):

- ``backends``: The array backends the round-trip suite runs on, and how the harness moves bytes to and from them
- ``bench``: ``kvproof bench roundtrip``: select and load throughput against a plain contiguous copy
- ``golden``: The chapter's printed lab outputs, verbatim, and the comparison of the spec's reports with them
- ``mutants``: Deliberately broken round trips: the negative controls of every round-trip law
- ``roundtrip_laws``: The round-trip laws of the DeepInfer state layout, runnable on any array backend
"""
