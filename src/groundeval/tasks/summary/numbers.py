"""Numbers in a summary that are not values, and how a written value rounds a recorded one.

A clinician's handoff writes dates, reference bounds and ranges beside results, and rounds what
the record holds; none of that is a value the record lacks:

* **Dates** (``mask_dates``): ``2016-10-15``, ``10/15/16``, ``18/08/25``, ``18.08.2025``, a month
  and year (``10/2016``), a year (``2019``, ``'03``), a month name with a day or a year
  (``Mar 2025``, ``3 Mar``, ``Mar-25``).
* **Bounds** (``bound_before``): a number after ``<``, ``>``, ``≤``, ``≥``, ``<=``, ``>=`` or a
  word that makes it a limit (``less than``, ``at least``, ``up to``, ``below``, ``above``,
  ``under``, ``over``) is a goal or a reference limit (``A1c 6.0% (goal <5.7%)``, ``eGFR >=90``); so
  is a dose limit (``max 10 mg``, ``the 10 mg cap``) and a planned dose (``reduce simvastatin to
  10 mg``).
* **Rounding** (``rounds_to``): a written number equals a recorded one rounded to the written
  decimals, by either rule of ISO 80000-1:2009 Annex B (a tie goes to the even digit, rule A, or
  away from zero, rule B, the rule most people are taught), on the recorded value's decimal
  digits (``132.65`` is written ``132.7``, ``132.6`` or ``133``; ``6.35`` is ``6.4``, which binary
  floating point would round to ``6.3``, and a record display shows; that is accepted too).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = ["bound_after", "bound_before", "mask_dates", "rounds_to"]

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
          r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)(?![a-z])\.?")
_DATES = re.compile(
    r"(?<![\d.])(?:\d{4}-\d{1,2}(?:-\d{1,2})?"  # ISO 8601: 2016-10, 2016-10-15
    r"|\d{1,2}([/.-])\d{1,2}\1\d{2,4}"  # 10/15/16, 18.08.2025, 18-08-25
    r"|\d{1,2}[/.-](?:19|20)\d{2}"  # 10/2016
    r"|(?:19|20)\d{2}(?!\.\d)"  # 2019
    r"|'\d{2})(?![\d])"  # '03
    rf"|(?<![\w.])\d{{1,2}}(?:st|nd|rd|th)?[\s-]+{_MONTH}"  # 3 Mar, 3rd March
    rf"|(?<![A-Za-z]){_MONTH}[\s-]+\d{{1,2}}(?:st|nd|rd|th)?(?![\d.])")  # Mar 3, Mar-25
_BOUND = re.compile(r"(?:[<>\u2264\u2265]\s*=?|=\s*[<>]|(?<![a-z])(?:(?:less|greater|more|lower|higher)\s+than"
                    r"|at\s+(?:least|most)|up\s+to|below|above|under|over|max(?:imum)?\.?|exceed(?:s|ing)?(?:\s+the)?"
                    r"|not\s+to\s+exceed|capped\s+at|limit(?:ed)?\s+to))\s*$", re.IGNORECASE)
_PLANNED = re.compile(r"(?<![a-z])(?:reduce|reducing|decrease|decreasing|lower|lowering|drop|dropping|increase"
                      r"|increasing|titrate|titrating|up-?titrate|wean|weaning|taper|tapering)(?![a-z])"
                      r"[^.;,:\n]{0,40}?(?<![a-z])to\s*$", re.IGNORECASE)
_BOUND_AFTER = re.compile(r"\s*(?:cap|max(?:imum)?|limit|ceiling|elemental)(?![a-z])", re.IGNORECASE)


def mask_dates(text: str) -> str:
    """``text`` with the digits of every date (module docstring) turned into spaces: same length."""
    return _DATES.sub(lambda m: re.sub(r"\d", " ", m[0]), text)


def bound_before(text: str, at: int) -> bool:
    """True when the number starting at ``at`` of ``text`` is a bound (``<5.7``, ``>= 90``, ``at least 60``).

    Also a dose limit (``max 10 mg``, ``exceeds the 10 mg``) and a planned dose (``reduce simvastatin
    to 10 mg``, ``consider titrating to 40 mg``: a change to make, in the base or ``-ing`` form;
    ``was reduced to 10 mg`` states a dose, and is checked).
    """
    return bool(_BOUND.search(text[max(0, at - 16):at]) or _PLANNED.search(text[max(0, at - 60):at]))


def bound_after(text: str, end: int) -> bool:
    """True when the value ending at ``end`` of ``text`` is named a limit after it (``the 10 mg cap``).

    Also an amount of another quantity than the product's strength: ``65 mg elemental iron`` in
    ferrous sulfate 325 mg, which no record value states.
    """
    return bool(_BOUND_AFTER.match(text, end))


def rounds_to(value: float, written: float, decimals: int) -> bool:
    """True when ``value`` is ``written`` or rounds to it at ``decimals`` places (ISO 80000-1 rule A or B).

    Args:
        value: The recorded (or converted) value.
        written: The number as the summary writes it.
        decimals: The decimals it is written with (0 for ``133``).
    """
    if abs(value - written) < 1e-9 or abs(round(value, decimals) - written) < 1e-9:
        return True  # as written, or rounded as a display of the binary value would (9.35 -> 9.3)
    try:
        exact = Decimal(repr(value))
        step = Decimal(1).scaleb(-decimals)
        return any(abs(float(exact.quantize(step, rounding=rule)) - written) < 1e-9
                   for rule in (ROUND_HALF_EVEN, ROUND_HALF_UP))
    except InvalidOperation:  # nan, inf
        return False
