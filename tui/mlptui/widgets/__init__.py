"""Widgets of the explorer. Big lists render only the lines on screen (`lines.LineList`)."""
