"""Memory: allocations per op, peaks per device, memory not freed."""
