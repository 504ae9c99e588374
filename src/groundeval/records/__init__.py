"""Run records: the case and run record models, outcomes, aggregates, trial statistics and scope."""
