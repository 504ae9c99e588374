"""Rule-based agents (no model) reading the record with their own code: honest floors and negative controls."""
