"""mlptui: explore PyTorch-profiler traces in the terminal."""

__version__ = "0.1.0"
