"""Steps and the overview: per-step figures and verdicts, the step-time breakdown, the overview table, device marks (stream syncs, hardware counters) and the trace's integrity."""
