"""The jit page: what compiling buys and costs, measured honestly."""
