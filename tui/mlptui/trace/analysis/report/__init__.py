"""The whole-trace reports: `summary` and the profile sections, assembled from every analysis."""
