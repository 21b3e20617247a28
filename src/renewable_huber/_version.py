"""Single source of the package version (the native distributions pin to it with ==)."""

__version__ = "0.1.0"
