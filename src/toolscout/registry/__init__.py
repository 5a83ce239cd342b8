"""Registry files: loading the servers an install fronts, and translating the formats they come in."""
