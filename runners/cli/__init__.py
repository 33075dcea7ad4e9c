"""The command line of ``python -m runners``: one module per command group."""
