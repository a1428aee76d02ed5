"""A run of many ranks as one map and one reduce: each rank file becomes a small digest where it is read
(this process, a local worker process, or a Dask worker), and the digests reduce to the run's report."""
