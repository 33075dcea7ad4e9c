"""The contract between ``runners`` and ``sizing``: trial table, run folder, CPU profiles.

Imports neither ``runners`` nor ``sizing``; both import it.
"""
