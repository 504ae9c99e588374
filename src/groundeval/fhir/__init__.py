"""FHIR helpers: plain-dict Bundle readers (truth code) and the read-only tools offered to agents."""
