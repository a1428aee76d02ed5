"""The figures of one trace, by job: events (how events connect) < kernels, comms < steps, operators, attention
< memory, ranks, critical_path < advice < expectations < report. The layers are import-linter contracts."""
