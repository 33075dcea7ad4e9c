"""What is asked: the workload value and what it is read from (access logs)."""
