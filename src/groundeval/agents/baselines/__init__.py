"""Rule-based agents: the honest floor and the negative control of each built-in task."""
