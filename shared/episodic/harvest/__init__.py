"""harvest."""
