"""labtui: a terminal lab console for people who measure virtualization."""

__version__ = "0.1.0"
