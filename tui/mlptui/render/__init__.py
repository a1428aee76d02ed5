"""Renderers: text, Markdown and CSV of the core's typed reports."""
