"""Fleets: counts per type, zones and zone loss, mixed fleets, the decision."""
