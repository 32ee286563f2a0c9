"""The deterministic interleaving explorer: a controlled scheduler over ``impl/_sync``, its strategies, schedule
tokens, recorded histories and the linearizability checker (docs/explore.md).

Modules (held against the folder by ``stateful_tests/tests/test_rooms.py``):

- ``bench``: ``kvproof bench explore``: how fast the explorer runs schedules and the checker judges histories
- ``bench_services``: What Dynamo's trees sustain through the doors kvproof reaches them by, side by side in one run
- ``campaign``: Explore a scenario: run schedules under a strategy, stop at the first failure, shrink it, and name it by a token
- ``dfs``: Exhaustive search with a preemption bound: every schedule with at most ``bound`` preemptions, once each
- ``directed``: Directed: one chosen interleaving, named by a decision point instead of by its place in a schedule
- ``faults``: Faults mid-operation: raise at each yield point of each write path, then judge what is left
- ``history``: Concurrent histories: every call's invocation, response, thread, operation and result
- ``hypothesis_choice``: Hypothesis draws every decision, so a failing workload and its schedule shrink together
- ``linearizability``: The linearizability checker: is a concurrent history explained by some order of the sequential spec?
- ``pct``: PCT, probabilistic concurrency testing with bug depth ``d`` (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS 2010)
- ``production``: A concurrent tree fed as production feeds it: the events of different workers at once, reads racing them
- ``programs``: What every explored scenario shares: threads of recorded calls, then checks of the final state and the history
- ``random_walk``: Random walk: at every decision, any runnable thread with equal probability
- ``removal_race``: A worker's removal racing its own queued events, on any indexer that queues events (a pool, the standalone indexer)
- ``real_threads``: The uncontrolled mode: a scenario's threads as real threads, its history checked the same way
- ``replay``: Replay: the recorded decisions, in order; past their end, no preemption (the running thread, else the lowest id)
- ``runs``: The explorer's campaigns as ``kvproof explore`` and ``kvproof replay schedule`` run them, each returning a report
- ``scheduler``: The controlled scheduler: exactly one logical thread runs at a time, and a strategy picks who runs next
- ``specs``: The sequential specifications the linearizability checker holds histories to: the reference layers
- ``token``: Schedule tokens and schedule files: how a failing interleaving is printed, saved and replayed
- ``toys``: Small programs with known schedule counts: the explorer's self-test and its benchmark
- ``tracker_scenarios``: The slot tracker's races, as explorable programs
- ``tree_scenarios``: The tree's races, as explorable programs: the interleavings real routers have broken before
"""
