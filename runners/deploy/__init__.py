"""One private nginx on one host: its config text and its deployment."""
