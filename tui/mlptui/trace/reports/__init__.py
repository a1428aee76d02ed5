"""Typed reports: what the core's analyses return, as frozen dataclasses the JSON encoder writes field by field."""
