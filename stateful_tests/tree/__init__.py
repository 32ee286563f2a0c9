"""The radix tree's checks: node-rule and API laws, the contract machine, vectors, streams, conformance, the lockstep twin, stress, mutants, bench."""
