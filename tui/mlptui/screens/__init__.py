"""Screens of the explorer: the trace picker, loading, one trace's panes, help."""
