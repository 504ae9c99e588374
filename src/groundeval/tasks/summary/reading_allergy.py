"""What a sentence says of allergies: whether a drug named in it is stated as an allergen.

A word starting ``allerg`` states an allergy unless it names a class of drugs ("allergy
medication", "allergy-type meds"), a place in the record ("the allergy list"), a body system of a
problem-oriented note ("Allergy/derm -"), or says there is none ("no known allergies").
"""

from __future__ import annotations

import re

__all__ = ["allergic", "allergy_line"]


_ALLERGY_DRUGS = re.compile(
    r"(?:anti-?\s*)?allerg\w*(?:[-\s]+(?:type|related|relief))?[-\s]+"
    r"(?:meds?|medications?|medicines?|drugs?|treatments?|therapy|tablets?|rx|regimens?|kit|pen)(?![a-z])")


_ALLERGY_SYSTEM = re.compile(
    r"(?<![a-z])(?:allerg\w*\s*(?:/|&|and)\s*(?:derm\w*|immun\w*|skin|atop\w*|ent|resp\w*)"
    r"|(?:derm\w*|immun\w*|skin|ent|resp\w*)\s*(?:/|&)\s*allerg\w*)(?![a-z])")
"""A body system of a problem-oriented note ("Allergy/derm - fexofenadine 60 mg", "Allergy &
immunology:"): the specialty its drugs and problems belong to, not an allergy to them."""


def allergic(text: str) -> bool:
    """True when ``text`` holds a word starting ``allerg`` that states an allergy.

    ``Allergy-type meds: EpiPen, fexofenadine``, ``allergy medication`` and ``an allergy-type
    regimen`` name a class of drugs (what the patient takes for an allergy), not an allergy to
    them; "no allergies" states none; "Allergy/derm -" is a body system (``_ALLERGY_SYSTEM``).
    """
    low = _ALLERGY_SYSTEM.sub(" ", text.lower())
    return "allerg" in _ALLERGY_LIST.sub(" ", _NO_ALLERGY.sub(" ", _ALLERGY_DRUGS.sub(" ", low)))


_ALLERGY_LIST = re.compile(r"(?<![a-z])(?:the|his|her|their|an?)\s+allerg\w*\s+(?:list|record|section|field|entry|"
                           r"entries|tab)(?![a-z])")
"""The record's allergy list named as a place ("no allergies on the allergy list"): no allergen."""


_NO_ALLERGY = re.compile(r"(?<![a-z])(?:no|nil|nkda|without|lists no|no known|no recorded|no documented)"
                         r"(?:\s+(?:known|recorded|documented|drug))*\s+allerg\w*")
"""A statement that there is no allergy ("the chart lists no allergies"): it makes nothing beside it an allergen."""


def allergy_line(sentence: str) -> bool:
    """True when ``sentence`` opens with a word starting ``allerg`` that is not a drug class (``allergic``)."""
    low = sentence.lstrip(" -*•").lower()
    return low.startswith("allerg") and not _ALLERGY_DRUGS.match(low) and not _ALLERGY_SYSTEM.match(low)
