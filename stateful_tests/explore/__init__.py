"""The deterministic interleaving explorer: a controlled scheduler over ``impl/_sync``, its strategies, schedule
tokens, recorded histories and the linearizability checker (docs/explore.md)."""
