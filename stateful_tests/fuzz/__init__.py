"""Hostile input, fuzzed: the wire format's grammar plus byte-level mutation, over every tree at once.

- ``grammar``: Hypothesis strategies for ``KvCacheEvent`` JSON, written as text so that it can hold
  what ``json.dumps`` never writes (duplicate keys, ``NaN``, ``-0``, integer literals of thousands
  of digits, lone surrogates, deep nesting), and for the hostile Python values a caller can pass
  (numpy integers, bools, ``KvCacheEvent`` objects out of range, bytes-like queries).
- ``mutate``: byte-level mutations of an encoded event (flips, cuts, splices, hostile tokens).
- ``codec``: the tagged JSON a saved case is written in (bytes, numpy scalars and event objects
  round-trip exactly), so a crash file replays on another machine.
- ``campaign``: one case at a time over every target, with the same checks after each: a typed
  error or an acceptance, the state byte-identical after a rejection, ``check()`` holding, every
  kvproof tree deciding alike, Dynamo deciding alike except for the recorded differences
  (docs/hostile-input.md); crashes saved under ``kvproof-failures/fuzz/`` and replayed by
  ``kvproof fuzz --replay FILE``.
- ``runs``: ``kvproof fuzz`` as library calls: a campaign over the fleet, or one saved case run again, each as a report
"""
