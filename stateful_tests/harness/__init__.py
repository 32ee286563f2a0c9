"""Family-agnostic machinery of the checks: tree targets, profiles, seeding, block paths, the scenario format, forced interleavings."""
