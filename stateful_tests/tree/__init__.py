"""The radix tree's checks: node-rule and API laws, the contract machine, vectors, streams, conformance, the lockstep twin, stress, mutants, bench.

Modules (held against the folder by ``stateful_tests/tests/test_rooms.py``):

- ``api_laws``: Two laws of a tree's public API that no single event shows: dumps rebuild, bad input is harmless
- ``bench``: Throughput and memory of the trees on one workload, measured side by side in one run
- ``conformance``: Differential conformance: two trees, one stream, every outcome and every query compared
- ``crowd``: Cost per operation when many ranks share one prefix (kvproof issue 31, section 4)
- ``explain``: Explain differences: search the rule variants for one under which the subject agrees exactly
- ``impl_mutants``: Deliberately broken concurrent trees: the negative controls of the concurrency checks
- ``laws``: Property checks of the spec's node rules, for random edges and coverage
- ``log``: Event logs: a tree's operations as JSON lines, the form counterexamples are written and replayed in
- ``machine``: A Hypothesis state machine that holds any radix tree to the spec's abstract contract
- ``memory``: Memory per cached block of every tree, built from the same events, side by side (a benchmark, never a test)
- ``mutants``: Deliberately broken trees: the negative controls of every check kvproof runs
- ``pipeline``: The thread-pool indexer used the way a router uses it: events pipelined, then one flush
- ``pool_stress``: The thread-pool indexer under real threads: removers racing the writers of the same workers
- ``releases``: Every release of ``ai-dynamo-runtime`` through the gate: the table of docs/releases.md
- ``replay``: Replay a recorded log of router events through the spec's contract and, side by side, two trees
- ``router``: A router simulation: a request trace turned into the inputs a KV-aware router receives, in order
- ``soak``: The churn soak: hours of simulated traffic through a tree, and laws that no collection grows without bound
- ``steps``: The tree's scenario steps (store, remove, clear, worker removal, query, dump) and their replay
- ``streams``: Random, replayable event streams for differential testing of radix trees
- ``stress``: Real-thread stress of the concurrent tree, in the style of Dynamo's race soak (crtc.md §10 "Soak")
- ``target_failures``: A target that crashed, ran out of memory or hung (``harness.isolation.TargetFailure``), as a replayable finding
- ``trace_check``: Trace conformance: every tree and every slot tracker fed one router simulation, compared at every step
- ``trace_stress``: The trace under real threads: a router simulation's events applied by concurrent writers, read the whole time
- ``traffic``: Long, realistic router traffic: requests from a fleet of capacity-bounded engines, as tree operations
- ``twin``: Run two trees in lockstep and fail on the first observable difference
- ``vectors``: Observed behaviours of the real Dynamo tree, as replayable vectors
- ``verdicts``: What kind of difference two trees show, and whether it is a known finding
"""
