"""Typed reports: what the core computes, as the renderers, the API and --json read it."""
