"""Family-agnostic machinery of the checks: tree targets, profiles, seeding, block paths, the scenario format, forced interleavings.

Modules (held against the folder by ``stateful_tests/tests/test_rooms.py``):

- ``census``: A census of everything a data structure holds: every object and container reachable from it, walked
- ``controls``: Negative controls that count only the failure they expect
- ``dynamo_indexer``: Dynamo's standalone KV indexer, ``python -m dynamo.indexer --threads N``, as a tree target
- ``dynamo_selection``: Dynamo's in-process selection service, ``dynamo._core.SelectionService(indexer_threads=N)``, as a tree target
- ``errors``: The two ways a campaign refuses to run, as the command reports them: bad input, or a machine that lacks something
- ``files``: Files the checks write for a maintainer to replay: written whole or not at all
- ``host``: The child side of an isolated target: ``python -m kvproof.stateful_tests.harness.host TARGET``
- ``interleave``: Force one interleaving with real threads: pause a thread at a named yield point
- ``isolation``: A target that is not kvproof's own runs in a child process, so that nothing it does can take kvproof down
- ``lockstep``: Many independent jobs run in lockstep, so a target whose every round trip costs a fixed delay pays it once for all
- ``measure``: Memory measured where nothing else pollutes it: the resident set, and a measurement run in a fresh interpreter
- ``optional``: What a test does when an optional package it needs is missing: skip with the reason, or fail when CI requires it
- ``paths``: Paths of local hashes and the blocks they stand for: the one place prefix-derived hashes are made
- ``process_guard``: Keep the servers the harness starts from outliving it, and say where they listen
- ``profiles``: The profiles: how much each rule family explores, in one object per profile
- ``protocol``: The wire protocol of a target in any language: its messages, as the one source of truth, and their JSON Schema
- ``scenario``: The scenario format shared by the tree vectors and the sequence values
- ``seeding``: One seed for every Hypothesis run kvproof starts, so that runs are reproducible everywhere
- ``services``: Servers the harness starts and talks to on loopback: ports, the environment, keep-alive HTTP, start and stop
- ``shards``: Shards: a campaign's work items split into independent, deterministic parts, and run in parallel
- ``surface``: What a target's door cannot carry, so that a row checks the rest and says what it left out
- ``targets``: Targets: the radix trees kvproof can check, behind the one API they share
- ``wire_server``: ``kvproof serve``: any Python target answering the wire protocol, on stdio or loopback HTTP
- ``wire_target``: A target in any language: ``--target exec:CMD`` or ``--target http://127.0.0.1:PORT``, over the wire protocol
"""
