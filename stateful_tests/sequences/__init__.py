"""The active-sequence state's checks: laws, the three-way machine, upstream values, bad input, stress, the real slot tracker as oracle, mutants.

Modules (held against the folder by ``stateful_tests/tests/test_rooms.py``):

- ``bad_input``: Bad input for a slot tracker: every rejection is typed and leaves the state exactly as it was
- ``fixtures``: Pytest fixtures of the active-sequence tests (registered once, in ``conftest.py``)
- ``growth``: How one tracker call grows with the prompt length: bytes (tracemalloc) and block hashes hashed
- ``laws``: Laws of the active-sequence state, sampled by Hypothesis over random request histories
- ``machine``: A Hypothesis state machine that drives the spec, the reference and the implementation together
- ``memory``: Memory per active request block of the slot trackers, side by side (a benchmark, never a test)
- ``model``: The spec as a tracker: ``SpecSlotTracker`` holds a ``spec.slot_tracker.SlotTrackerState`` and applies the pure handlers, so the spec, the reference and the implementation share one API
- ``mutants``: Deliberately broken slot trackers: the negative controls of every active-sequence check
- ``oracle``: Differential conformance against the real slot tracker (``python -m dynamo.slot_tracker``, 1.3.0.post1 to 1.6.1)
- ``selection_oracle``: A second oracle for the active-sequence state: the Rust ``ActiveSequences`` inside Dynamo's selection service
- ``soak``: The churn soak of a slot tracker: hours of simulated requests, and no collection that grows without bound
- ``steps``: The active-sequence state's scenario steps (add, mark, free, expire, register, reads) and their replay
- ``stress``: Real-thread stress of a concurrent slot tracker: add / complete / free / read races, then a quiescent audit
- ``values``: Every reference value of the active-sequence state, as replayable scenarios
"""
