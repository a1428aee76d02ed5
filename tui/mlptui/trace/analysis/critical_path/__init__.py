"""The critical path of a step: the dependency graph of its CPU ops, launches, device work and syncs, and the longest chain through it."""
