"""Ranks of one run: each rank's digest, matched collective calls, the ranks' shared clock and stragglers."""
