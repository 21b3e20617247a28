"""Adapters to other libraries' conventions."""
