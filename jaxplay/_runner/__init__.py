"""The runner's private parts: the wire protocol, the sandbox adapters and the worker entry point.

``jaxplay.runner`` is the public surface; nothing outside it should import from here.
"""
