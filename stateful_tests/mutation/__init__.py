"""Mutation testing of spec/, reference/ and impl/ with mutmut: do the suite's tests notice a changed rule?

mutmut changes one operator, constant or call at a time (a *mutant*) and runs the tests that
reach the changed function; a failing test *kills* the mutant, passing tests let it *survive*.

- ``profiles``: which modules each profile mutates and the tests that judge them, and the goals;
- ``workspace``: the copy of the tree mutmut works in (under ``.kvproof-mutate/``) and its config;
- ``driver``: mutmut run as a subprocess in that copy, a shard's mutant names, the results read back;
- ``ttd``: the pytest plugin that records how long each mutant took to be detected;
- ``gate_ttd``: the gate's time to detection (``kvproof check --fail-fast``) over a sample of the killed mutants;
- ``order``: the pytest plugin that runs a mutant's tests one file at a time, the cheapest file first;
- ``stall``: the pytest plugin that ends a mutant's session as a timeout when one test file runs far past its cost;
- ``equivalents``: the reviewed list of mutants that change nothing (stateful_tests/mutation/equivalents.toml);
- ``scores``: the score per module, the survivors with their diffs, the gaps, and the JSON.
- ``verdicts``: the verdicts of record, one compact file per module group (docs/mutation-runs/);
- ``runs``: ``kvproof mutate`` as library calls: a run (fresh or rejudged) or a matrix's merge, as a report.

Source: docs/sources.md#kvproof-mutation ("Mutation testing").
"""
