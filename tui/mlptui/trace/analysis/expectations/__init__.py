"""Expectations: the rules a user writes about a trace (`mlptui check`), read from a file and judged on the trace."""
