"""The active-sequence state's checks: laws, the three-way machine, upstream values, bad input, stress, the real slot tracker as oracle, mutants."""
