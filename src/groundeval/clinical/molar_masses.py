"""Molar masses of laboratory analytes, by LOINC code: how mmol/L and mg/dL of one analyte convert.

UCUM converts a substance concentration (``mmol/L``) into a mass concentration (``mg/dL``) only
through the analyte's molar mass, which UCUM cannot know (``terminology.ucum.convert``). Clinicians
write both ("glucose 67 mg/dL (3.7 mmol/L)", "total cholesterol 5.5 mmol/L"), so the summary task
reads a value stated in the other kind of concentration through this table.

Sources: PubChem molecular weights (National Center for Biotechnology Information, PubChem
Compound database): glucose CID 5793 (180.156 g/mol), cholesterol CID 5997 (386.65 g/mol; total,
HDL and LDL cholesterol are reported as cholesterol), creatinine CID 588 (113.12 g/mol);
triglycerides are reported as triolein, CID 5497163 (885.4 g/mol; the conventional factor
mg/dL x 0.01129 = mmol/L); calcium CID 5460341 (40.078 g/mol). Urea nitrogen (BUN) is reported as
the mass of urea's two nitrogen atoms, so one mmol/L of urea is 2 x 14.007 = 28.014 mg/L of it
(IUPAC standard atomic weight of nitrogen; the conventional factor BUN mg/dL x 0.357 = urea mmol/L):
"urea 5.3 mmol/L" is BUN 14.8 mg/dL. The labs task's table (``fixtures/terminology/lab_thresholds.json``)
gives the same values for its glucose and LDL rows and is read first.
"""

from __future__ import annotations

__all__ = ["MOLAR_MASS_G_PER_MOL"]

_GLUCOSE, _CHOLESTEROL, _CREATININE, _TRIOLEIN = 180.156, 386.65, 113.12, 885.4
_CALCIUM, _UREA_NITROGEN = 40.078, 28.014

MOLAR_MASS_G_PER_MOL: dict[str, float] = {
    "2339-0": _GLUCOSE,  # Glucose [Mass/volume] in Blood
    "2345-7": _GLUCOSE,  # Glucose [Mass/volume] in Serum or Plasma
    "2093-3": _CHOLESTEROL,  # Cholesterol [Mass/volume] in Serum or Plasma
    "2085-9": _CHOLESTEROL,  # Cholesterol in HDL [Mass/volume] in Serum or Plasma
    "18262-6": _CHOLESTEROL,  # Cholesterol in LDL [Mass/volume] in Serum or Plasma by Direct assay
    "13457-7": _CHOLESTEROL,  # Cholesterol in LDL [Mass/volume] in Serum or Plasma by calculation
    "2089-1": _CHOLESTEROL,  # Cholesterol in LDL [Mass/volume] in Serum or Plasma
    "2571-8": _TRIOLEIN,  # Triglyceride [Mass/volume] in Serum or Plasma
    "2160-0": _CREATININE,  # Creatinine [Mass/volume] in Serum or Plasma
    "38483-4": _CREATININE,  # Creatinine [Mass/volume] in Blood
    "17861-6": _CALCIUM,  # Calcium [Mass/volume] in Serum or Plasma
    "49765-1": _CALCIUM,  # Calcium [Mass/volume] in Blood
    "3094-0": _UREA_NITROGEN,  # Urea nitrogen [Mass/volume] in Serum or Plasma
    "6299-2": _UREA_NITROGEN,  # Urea nitrogen [Mass/volume] in Blood
}
"""LOINC code -> molar mass of the analyte, g/mol (module docstring for the sources)."""
