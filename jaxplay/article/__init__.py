"""The tutorial article's code: every snippet of its eight sections, runnable.

Why a package of its own: the article (“JAX core API in depth: composable functional transforms
beyond NumPy”, a Chinese-language tutorial on JAX's core API) is what the whole app explores. Its
code exists once, here; the walkthrough, the Code Lab and the topic pages all use this copy.
"""
