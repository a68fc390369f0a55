"""The shared machinery every topic stands on: honest timing, compilation, the safe formula
language.

Why a layer of its own: a number on one page must mean the same as on another, so there is one
timing harness, one compile path and one expression parser. ``core`` imports no other jaxplay
subpackage, so any topic may use it and it can be tested alone.
"""
