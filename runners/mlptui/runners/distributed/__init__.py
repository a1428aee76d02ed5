"""Runs over several processes or GPUs: the launcher, one rank's main, and the data- and tensor-parallel
models they run."""
