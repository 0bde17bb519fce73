"""Versioned prompt files shipped with the package."""
