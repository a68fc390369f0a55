"""The memory page: what gradient checkpointing saves, and what XLA fuses."""
