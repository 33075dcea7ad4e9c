"""Calibrating a CPU: the campaign's settings, the campaign and its fit."""
