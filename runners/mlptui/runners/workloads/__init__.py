"""The workloads: the registry of names, their shapes, the modules they build and their training step."""
