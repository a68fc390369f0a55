"""The tracing page: one function at every stage, what tracers are, recompiles and loops."""
