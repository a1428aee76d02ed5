"""What every layer shares: the user-facing error type, terminal-safe text, bounded values, atomic file
writes and the progress callback. Imports nothing else of mlptui."""
