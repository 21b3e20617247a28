"""Backends: implementations of the renewable update (see ``registry`` for the list)."""

from .registry import BACKEND_SPECS, availability, create_backend

__all__ = ["BACKEND_SPECS", "availability", "create_backend"]
