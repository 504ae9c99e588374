"""The extraction task: active medications of one patient, as RxNorm codes."""
