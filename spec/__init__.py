"""The law: the rules of the KV-router's state as pure functions over frozen data.

Nothing here imports from the other layers. Read in this order:

0. ``arith``       - the arithmetic every kernel is written in (Python to run, Z3 to prove).

The radix tree:

1. ``primitives``  - hashes, ranks, blocks, the frozen map.
2. ``errors``      - the named rejections.
3. ``events``      - the events, the operations, and Dynamo's wire format.
4. ``coverage``    - one edge's coverage: current cutoff, covers, cover-prefix, removal.
5. ``shape``       - split, leaf extension, sticky internal, store and descend plans.
6. ``match``       - the prefix-match walk and the early-exit law.
7. ``dump``        - the dump and the abstract index, for any tree.
8. ``invariants``  - every structural invariant as a named predicate.
9. ``contract``    - the shape-free contract: held and reachable blocks, score bounds.
10. ``api``        - the Protocols a ``--target`` provides: the tree API, the slot-tracker API.

The active-sequence state: ``sequence_inputs``, ``sequence_errors``, ``prefill`` (anchor,
credit, modeled remaining time), ``token_load``, ``sequences`` (one slot), ``slot_tracker``
(WorkerTable, RequestIndex, PromptRegistry), ``sequence_invariants``.

DeepInfer chapter 11: ``quantities``, ``deepinfer_errors``, ``hit_length``, ``service_queue``,
``capacity``, ``acceptance``, ``state_layout``.

Each function's docstring states its rule and names its source section (the research notes,
the seeds under ``shared/seeds``, or an observation of the real package recorded in
``docs/*-findings.md``).
"""

if __name__ != "kvproof.spec":
    raise ImportError(
        f"import kvproof.spec, not {__name__}: the spec/ folder is installed as the package kvproof.spec"
        " (pyproject package-dir), and importing it by its folder name would load a second copy of every module"
    )
