"""HbA1c in IFCC units (mmol/mol) from the NGSP/DCCT percentage, by the IFCC-NGSP master equation.

Laboratories in the US report HbA1c as an NGSP percentage (LOINC 4548-4, ``%``); those of the UK and
most of Europe in IFCC units (LOINC 59261-8, ``mmol/mol``), so a clinician may write "HbA1c 43
mmol/mol" for a record's 6.06 %. UCUM cannot convert the two: they are different calibrations,
related by a regression, not by a unit (``terminology.ucum.convert`` would make 43 mmol/mol 4.3 %).

Source: Hoelzel W, Weykamp C, Jeppsson JO, et al. IFCC reference system for measurement of
hemoglobin A1c in human blood and the national standardization schemes in the United States,
Japan, and Sweden: a method-comparison study. Clin Chem 2004;50(1):166-174. Master equation:
NGSP (%) = 0.09148 x IFCC (mmol/mol) + 2.152.
"""

from __future__ import annotations

__all__ = ["HBA1C_NGSP_LOINC", "ifcc_mmol_per_mol"]

HBA1C_NGSP_LOINC = "4548-4"
"""Hemoglobin A1c/Hemoglobin.total in Blood, reported as an NGSP percentage."""


def ifcc_mmol_per_mol(ngsp_percent: float) -> float:
    """The IFCC value (mmol/mol) of an NGSP HbA1c (%), by the master equation (module docstring).

    Args:
        ngsp_percent: HbA1c, NGSP/DCCT %, e.g. 6.5.

    Returns:
        HbA1c, mmol/mol (6.5 % -> 47.5).
    """
    return (ngsp_percent - 2.152) / 0.09148
