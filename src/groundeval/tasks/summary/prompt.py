"""The summary task's prompt: what a handoff summary must cover, in at most N words.

The system prompt is the same for every case of a run (the cacheable prefix) and states the rules
the rubric scores (``truth``), without the rubric itself; the user turn is the patient's record as
FHIR Bundle JSON.
"""

from __future__ import annotations

__all__ = ["system_prompt", "user_prompt"]


def system_prompt(max_words: int) -> str:
    """The rules of a handoff summary, with the word limit (``max_words``, words)."""
    return f"""\
You write the handoff summary a clinician reads before taking over a patient's care, from the
patient's record (a FHIR R4 Bundle). Write plain text of at most {max_words} words. Cover:

- every active diagnosis (Conditions whose clinicalStatus is active and whose SNOMED CT concept is a
  disorder: the display's tag says so, "(disorder)", where the record writes one; leave out findings
  and social situations);
- every current medication (MedicationRequests with status "active"), by name and strength;
- every medication allergy;
- the latest value, with its unit and date, of each result outside its guideline range.

Do not state a stopped or completed medication as current, nor a resolved condition as active: if
you mention one, say that it ended. State only values that are in the record, with their units.
Use the names the record uses where you can. Write the summary only, no preamble."""


def user_prompt(bundle: str) -> str:
    """The case's turn: the Bundle JSON."""
    return f"Patient record (FHIR Bundle):\n{bundle}\n\nWrite the handoff summary."
