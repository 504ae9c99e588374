"""The medication reconciliation task: the patient's report against the record."""
