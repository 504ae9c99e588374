"""The model layer: retries, error classification, the throttle, prices and the response cache."""
