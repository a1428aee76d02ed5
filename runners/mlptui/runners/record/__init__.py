"""Recording one run: resolving its arguments, profiling, the machine it ran on, the trace files and
the progress shown meanwhile."""
