"""Typed reports: what the core computes, as frozen dataclasses the JSON encoder writes field by field and the
renderers, the API and the app read by attribute."""
