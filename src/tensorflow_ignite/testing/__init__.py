"""Helpers for testing code that uses tensorflow-ignite against real Ignite nodes."""
