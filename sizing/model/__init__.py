"""The capacity model: workload, cost model, CPU platforms, capacity with its spread, curves."""
