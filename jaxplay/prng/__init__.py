"""The PRNG page: seeds, keys, splits, implementations and the pitfalls of randomness in JAX."""
