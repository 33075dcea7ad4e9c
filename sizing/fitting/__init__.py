"""Offline fits of the reference tables and cloud data (pandas and scipy live here)."""
