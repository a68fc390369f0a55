"""The vmap page: one example's function batched; axes, speed, a nested-vmap convolution, jaxprs."""
