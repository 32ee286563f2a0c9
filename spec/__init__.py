"""The law: the rules of the KV-router's state as pure functions over frozen data.

Nothing here imports from the other layers. Read in this order:

1. ``primitives``  - hashes, ranks, blocks, the frozen map.
2. ``errors``      - the named rejections.
3. ``events``      - the events, the operations, and Dynamo's wire format.
4. ``coverage``    - one edge's coverage: current cutoff, covers, cover-prefix, removal.
5. ``shape``       - split, leaf extension, sticky internal, store and descend plans.
6. ``match``       - the prefix-match walk and the early-exit law.
7. ``invariants``  - every structural invariant as a named predicate.
8. ``contract``    - the shape-free contract: held and reachable blocks, score bounds.

Each function's docstring states its rule and names its source section (crtc.md, the
seeds under ``shared/seeds``, or an observation of the real package recorded in
``docs/dynamo-findings.md``).
"""
