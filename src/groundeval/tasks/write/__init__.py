"""The write-and-validate task: a clinical note recorded as an R4B MedicationStatement."""
