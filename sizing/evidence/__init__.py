"""Evidence applied to the model from outside: runs, profiles, access logs, what to measure next."""
