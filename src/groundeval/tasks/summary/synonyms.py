"""Other names a clinician writes for a rubric item: abbreviations, spellings, brands.

* ``ABBREVIATIONS``: clinical abbreviations keyed by the **concept phrase** they stand for. A rubric
  name gets every abbreviation whose concept phrase it contains as whole words (after
  ``text.normalise``), so ``Essential hypertension`` gets ``HTN`` and ``Chronic kidney disease
  stage 1`` gets ``CKD``: the lookup reads the name's words, never the whole name as a key. Each
  sense is one the Clinical Abbreviation Sense Inventory lists for the abbreviation (CASI: Moon S,
  Pakhomov S, Liu N, Ryan JO, Melton GB. *A sense inventory for clinical abbreviations and acronyms
  created using clinical notes and medical dictionary resources.* J Am Med Inform Assoc
  2014;21(2):299-307, doi:10.1136/amiajnl-2012-001506; inventory release of 2014,
  https://conservancy.umn.edu/handle/11299/137703). Drug abbreviations: ``APAP`` and ``HCTZ``
  are on the ISMP List of Error-Prone Abbreviations, Symbols, and Dose Designations (Institute for
  Safe Medication Practices, 2021: drug-name abbreviations in clinical use that are misread);
  ``ASA`` (acetylsalicylic acid) and ``NTG`` (nitroglycerin) are not on that list: their senses
  are from the UMLS SPECIALIST Lexicon's abbreviation table (LRABR); ``GTN`` and ``glyceryl
  trinitrate`` (the British name) are SNOMED CT synonyms of 387404004 Nitroglycerin. ``TBI`` is keyed by
  ``traumatic brain injury`` only (it is not a sense of a non-traumatic brain injury).
* ``SYNONYMS``: other clinical names of a concept phrase (SNOMED CT synonyms of the concept:
  ``Disorder of kidney due to diabetes mellitus`` is also ``diabetic kidney disease``; 53741008
  ``Coronary heart disease`` is also ``CHD`` and ``coronary artery disease``; ``Opioid abuse`` is
  named ``opioid use disorder`` since DSM-5, American Psychiatric Association 2013); a few name the
  record's specific concept by its SNOMED CT parent, as clinicians do (``Idiopathic atrophic
  hypothyroidism`` 83664006 IS-A ``Hypothyroidism``; each entry gives its concept id).
* ``spelling``: British spellings folded to American (``hyperlipidaemia``, ``anaemia``,
  ``oedema``, ``haemoglobin``).
* Brands: the RxNorm brands of the packaged catalog (``terminology.Catalog``: ``[Brand]`` names and
  ``terminology.BRAND_INGREDIENTS``) and ``BRANDS`` (US brand names of catalog ingredients, from
  each product's FDA label title, Drugs@FDA), each mapped to its ingredients.
"""

from __future__ import annotations

import functools
import re

from groundeval.tasks.summary.text import contains, normalise

__all__ = ["ABBREVIATIONS", "BRANDS", "SALTS", "SAME_CONCEPT", "SYNONYMS", "brands_of", "drug_abbreviations",
           "drug_words", "problem_names", "same_concept", "spelling", "variants"]

ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    # conditions (CASI senses)
    "hypertension": ("htn",), "myocardial infarction": ("mi",),
    "non st segment elevation myocardial infarction": ("nstemi",),
    "st segment elevation myocardial infarction": ("stemi",),
    "ischemic heart disease": ("ihd",), "coronary artery disease": ("cad",),
    "congestive heart failure": ("chf",), "heart failure": ("hf",), "atrial fibrillation": ("afib", "af", "a fib"),
    "traumatic brain injury": ("tbi",), "osteoarthritis": ("oa",), "chronic kidney disease": ("ckd",),
    "diabetes mellitus": ("dm",), "chronic obstructive bronchitis": ("copd",),
    "chronic obstructive pulmonary disease": ("copd",), "major depressive disorder": ("mdd",),
    "major depression": ("mdd",), "alzheimer s disease": ("ad",), "hyperlipidemia": ("hld",),
    "gingivitis": (), "urinary tract infection": ("uti",), "otitis media": ("om",),
    "seizure disorder": ("sz disorder",), "opioid abuse": ("oud",),
    # results
    "hemoglobin a1c": ("a1c", "hba1c"), "body mass index": ("bmi",), "ldl cholesterol": ("ldl", "ldl c"),
    "low density lipoprotein cholesterol": ("ldl", "ldl c"), "blood pressure": ("bp",),
    "estimated glomerular filtration rate": ("egfr",),
    "glomerular filtration rate": ("egfr", "gfr"),  # LOINC 33914-3, short name "GFR/BSA.pred SerPlBld MDRD-ArVRat"
    "cholesterol in hdl": ("hdl", "hdl c", "hdl cholesterol"), "high density lipoprotein cholesterol": ("hdl", "hdl c"),
    "total cholesterol": ("tc",), "triglycerides": ("tg",), "urea nitrogen": ("bun",), "creatinine": ("cr",),
    "body weight": ("wt", "weight"), "body height": ("ht", "height"),  # CASI senses, keyed by the result
    "hematocrit": ("hct",),  # the LOINC short name of 4544-3, "Hct VFr Bld Auto"
    # drugs (ISMP 2021: APAP, HCTZ; UMLS LRABR: ASA, NTG; SNOMED CT 387404004 Nitroglycerin: its
    # synonyms "Glyceryl trinitrate", the British name, and "GTN"; "nitro": ISMP 2021, its "nitro drip")
    "aspirin": ("asa",), "hydrochlorothiazide": ("hctz",), "nitroglycerin": ("ntg", "gtn", "glyceryl trinitrate",
                                                                             "nitro"),
    "acetaminophen": ("apap", "paracetamol"), "warfarin": (), "vitamin b12": ("cyanocobalamin", "b12"),
    # British Approved Names of INN drugs (the BNF titles them "Adrenaline/epinephrine",
    # "Noradrenaline/norepinephrine"; the MHRA's change to INNs kept both names in use)
    "epinephrine": ("adrenaline",), "norepinephrine": ("noradrenaline",),
    # INNs of drugs RxNorm names by their USAN (WHO INN list; the BNF titles them "Salbutamol",
    # "Chlorphenamine maleate")
    "albuterol": ("salbutamol",), "chlorpheniramine": ("chlorphenamine",),
}
"""Concept phrase (normalised, as whole words of a rubric name) -> abbreviations (normalised)."""

SYNONYMS: dict[str, tuple[str, ...]] = {
    "disorder of kidney due to diabetes mellitus": ("diabetic kidney disease", "diabetic nephropathy", "dkd"),
    "inflammatory disorder due to increased blood urate level": ("gout",),
    "traumatic or nontraumatic brain injury": ("brain injury", "traumatic brain injury", "tbi"),
    "acute non st segment elevation myocardial infarction": ("nstemi", "non st elevation mi"),
    "acute st segment elevation myocardial infarction": ("stemi",),
    "chronic congestive heart failure": ("chf", "congestive heart failure", "heart failure"),
    "ischemic heart disease": ("coronary artery disease", "ihd", "cad"),
    "perennial allergic rhinitis with seasonal variation": ("allergic rhinitis",),
    "disease caused by severe acute respiratory syndrome coronavirus 2": ("covid 19", "covid", "sars cov 2"),
    "streptococcal sore throat": ("strep throat",),
    "blood pressure panel": ("blood pressure", "bp"),
    "cholesterol mass volume in serum or plasma": ("total cholesterol", "tc"),  # LOINC 2093-3
    "hemoglobin mass volume in blood": ("hb", "hgb"),  # LOINC 718-7
    "opioid abuse": ("opioid use disorder", "opiate abuse"),
    "coronary heart disease": ("chd", "coronary artery disease", "cad"),
    # SNOMED CT synonyms (the concept's own descriptions) and, marked "IS-A", the parent a clinician
    # names it by in a handoff (the child is the record's more specific code of the same problem).
    "stroke": ("cva", "cerebrovascular accident"),  # 230690007 Cerebrovascular accident (its FSN)
    "myocardial infarction": ("heart attack", "cardiac infarction"),  # 22298006
    # 83664006 IS-A 40930008
    "idiopathic atrophic hypothyroidism": ("hypothyroidism", "primary hypothyroidism", "hypothyroid"),
    "atopic dermatitis": ("atopic eczema", "eczema"),  # 24079001; IS-A 43116000 Eczema
    "osteoarthritis of hip": ("hip osteoarthritis", "osteoarthritis of the hip", "hip oa", "oa of hip",
                              "oa of the hip", "oa hip"),  # 239872002
    "osteoarthritis of knee": ("knee osteoarthritis", "osteoarthritis of the knee", "knee oa", "oa of knee",
                               "oa of the knee", "oa knee"),  # 239873007
    "seizure disorder": ("seizures", "epilepsy"),  # 128613002; 84757009 Epilepsy IS-A it
    "epilepsy": ("seizure disorder",),  # 84757009 IS-A 128613002
    "chronic kidney disease stage 1": ("ckd 1", "ckd stage 1", "ckd1", "ckd g1", "stage 1 ckd"),  # 431855005
    "alzheimer s disease": ("alzheimer disease", "alzheimers", "alzheimer dementia", "alzheimer s dementia",
                            "dementia of the alzheimer type"),  # 26929004
    "major depressive disorder": ("major depression", "depression"),  # 370143000; IS-A 35489007 Depressive disorder
    "cardiac arrest": ("cardiopulmonary arrest", "sudden cardiac arrest"),  # 410429000
    "chronic sinusitis": ("chronic rhinosinusitis",),  # 40055000
    "loss of teeth": ("tooth loss", "edentulism", "edentulous"),  # 37320007 (SNOMED CT synonym: edentulous)
    # the adjective a clinician states a problem with ("he is anaemic", "hypertensive on HCTZ")
    "anemia": ("anaemia", "anemic", "anaemic"),
    "hypertension": ("hypertensive", "high blood pressure"),
    "hypothyroidism": ("hypothyroid",),
    "essential hypertension": ("hypertension", "high blood pressure", "htn", "hypertensive"),
}
"""Whole rubric name (normalised) -> other names of the same concept (SNOMED CT synonyms)."""

_DRUG_PHRASES = ("aspirin", "hydrochlorothiazide", "nitroglycerin", "acetaminophen", "warfarin", "vitamin b12",
                 "epinephrine", "norepinephrine")
"""The drug concept phrases of ``ABBREVIATIONS``."""

_RESULT_AND_DRUG_PHRASES = frozenset({
    "cholesterol in hdl", "high density lipoprotein cholesterol", "total cholesterol", "triglycerides", "urea nitrogen",
    "creatinine", "cholesterol mass volume in serum or plasma", "hemoglobin mass volume in blood", "hemoglobin a1c",
    "body mass index", "ldl cholesterol", "low density lipoprotein cholesterol", "blood pressure",
    "estimated glomerular filtration rate", "gingivitis", "body weight", "body height", "hematocrit", *_DRUG_PHRASES})


def drug_abbreviations(name: str) -> tuple[str, ...]:
    """The drug abbreviations of ``ABBREVIATIONS`` that name the drug ``name`` (normalised), or ``()``.

    ``Acetaminophen`` gets ``apap`` and ``paracetamol``; ``Hydrochlorothiazide 25 MG`` gets ``hctz``.
    Unlike a condition's abbreviation (``MDD`` for several depressive disorders), a drug
    abbreviation has one sense (ISMP 2021, UMLS LRABR), so it also names a stopped drug.
    """
    key = drug_words(spelling(name))
    return tuple(a for phrase in _DRUG_PHRASES if contains(key, phrase) for a in ABBREVIATIONS[phrase])


SAME_CONCEPT: dict[str, tuple[str, ...]] = {
    "sprain of ankle": ("sprained ankle",),  # 44465007 Sprain of ankle (its description "Ankle sprain": inversion)
    "streptococcal sore throat": ("strep throat",),  # 43878008
    "disease caused by severe acute respiratory syndrome coronavirus 2": ("covid 19", "covid"),  # 840539006
    "whiplash injury to neck": ("whiplash", "whiplash injury"),  # 39848009
    "polyp of colon": ("colonic polyp", "polyp of the colon"),  # 68496003 (its description "Colonic polyp")
}
"""Whole rubric name (normalised) -> other descriptions of the very same SNOMED CT concept (never a
parent, never an abbreviation with another sense): safe for must-not criteria too."""

_INVERTIBLE = re.compile(r"^([a-z]+(?: [a-z]+)?) of (?:the )?([a-z]+)$")


def same_concept(name: str) -> list[str]:
    """Other names of exactly ``name``'s concept (normalised): ``SAME_CONCEPT`` and the inversion of "A of B".

    ``Sprain of ankle`` is also ``ankle sprain``, ``Fracture of rib`` ``rib fracture``, ``Polyp of
    colon`` ``colon polyp``: SNOMED CT's fully specified names put the finding before its site
    ("Fracture of rib"), and its descriptions and clinicians the site first ("Rib fracture"). Only
    a name that is one or two words, "of", and one word is inverted.
    """
    key = spelling(name)
    out = list(SAME_CONCEPT.get(key, ()))
    found = _INVERTIBLE.match(key)
    if found:
        out.append(f"{found[2]} {found[1]}")
    return out


_RESULT_PHRASES = frozenset({"blood pressure", "body mass index", "hemoglobin a1c", "ldl cholesterol",
                             "estimated glomerular filtration rate", "cholesterol in hdl", "total cholesterol"})
"""Result concept phrases that name, whole, every result whose name contains them."""


def problem_names() -> tuple[str, ...]:
    """Every problem name the tables know (normalised).

    The condition phrases of ``ABBREVIATIONS`` and ``SYNONYMS`` with their abbreviations and
    synonyms, plus ``diabetes`` (the everyday name of diabetes mellitus, SNOMED CT 73211009). Used
    to find speculation about problems (``scorer``: "possible diabetes").
    """
    out: list[str] = ["diabetes"]
    for phrase, abbreviations in ABBREVIATIONS.items():
        if phrase not in _RESULT_AND_DRUG_PHRASES:
            out += [phrase, *abbreviations]
    for phrase, others in SYNONYMS.items():
        if phrase not in ("blood pressure panel", "cholesterol mass volume in serum or plasma",
                          "hemoglobin mass volume in blood"):
            out += [phrase, *(o for o in others if o != "bp" and o != "blood pressure")]
    return tuple(dict.fromkeys(o for o in out if len(o) > 1))


BRANDS: dict[str, tuple[str, ...]] = {
    "depo provera": ("medroxyprogesterone acetate",), "depo subq provera": ("medroxyprogesterone acetate",),
    "provera": ("medroxyprogesterone acetate",), "coumadin": ("warfarin sodium",), "jantoven": ("warfarin sodium",),
    "zocor": ("simvastatin",), "lipitor": ("atorvastatin",), "crestor": ("rosuvastatin calcium",),
    "norvasc": ("amlodipine",), "plavix": ("clopidogrel",), "effient": ("prasugrel",),
    "zestril": ("lisinopril",), "prinivil": ("lisinopril",), "lopressor": ("metoprolol tartrate",),
    "toprol xl": ("metoprolol succinate",), "tenormin": ("atenolol",), "calan": ("verapamil hydrochloride",),
    "lanoxin": ("digoxin",), "synthroid": ("levothyroxine sodium",), "levoxyl": ("levothyroxine sodium",),
    "namenda": ("memantine hydrochloride",), "prozac": ("fluoxetine",), "benadryl": ("diphenhydramine hydrochloride",),
    "allegra": ("fexofenadine hydrochloride",), "ultram": ("tramadol hydrochloride",),
    "suboxone": ("buprenorphine", "naloxone"), "ventolin": ("albuterol",), "proair": ("albuterol",),
    "pulmicort": ("budesonide",), "epipen": ("epinephrine",), "nitrostat": ("nitroglycerin",),
    "vicodin": ("acetaminophen", "hydrocodone bitartrate"), "norco": ("acetaminophen", "hydrocodone bitartrate"),
    "percocet": ("acetaminophen", "oxycodone hydrochloride"), "motrin": ("ibuprofen",), "advil": ("ibuprofen",),
    "aleve": ("naproxen sodium",), "augmentin": ("amoxicillin", "clavulanate"),
    "zosyn": ("piperacillin", "tazobactam"), "activase": ("alteplase",), "razadyne": ("galantamine",),
    "cordarone": ("amiodarone hydrocholoride",), "vancocin": ("vancomycin",), "duragesic": ("fentanyl",),
    "microzide": ("hydrochlorothiazide",), "chlor trimeton": ("chlorpheniramine maleate",),
    # a British Approved Name of a combination (BNF: "Co-amoxiclav", amoxicillin with clavulanic acid)
    "co amoxiclav": ("amoxicillin", "clavulanate"),
}
"""US brand (normalised) -> ingredient names, from each product's FDA label title (Drugs@FDA); and
the British Approved Name of a combination, which names its ingredients as a brand does."""

SALTS = ("succinate", "tartrate", "calcium", "sodium", "potassium", "hydrochloride", "hcl", "bitartrate",
         "besylate", "maleate", "citrate", "sulfate", "mesylate", "fumarate", "acetate", "magnesium",
         "hydrocholoride", "hydrobromide")
"""Salt words dropped from a drug name (``metoprolol succinate`` -> ``metoprolol``)."""

_SPELLING = ((r"aemia\b", "emia"), (r"\bhaem", "hem"), (r"\banaem", "anem"), (r"\boedema", "edema"),
             (r"\boesoph", "esoph"), (r"idaemia", "idemia"), (r"\bischaem", "ischem"), (r"\bparalys", "paralyz"),
             (r"\btumour", "tumor"), (r"\bfoetal", "fetal"), (r"\bleukaem", "leukem"), (r"\bdiarrhoea", "diarrhea"))


def spelling(text: str) -> str:
    """``normalise`` then British spellings folded to American (``hyperlipidaemia`` -> ``hyperlipidemia``)."""
    out = normalise(text)
    for pattern, repl in _SPELLING:
        out = re.sub(pattern, repl, out)
    return out


@functools.cache
def _catalog_brands() -> dict[str, tuple[str, ...]]:
    from groundeval.terminology import BRAND_INGREDIENTS, Catalog

    out = {normalise(b): tuple(normalise(i) for i in names) for b, names in BRAND_INGREDIENTS.items()}
    for entry in Catalog.load():
        if entry.brand:
            out.setdefault(normalise(entry.brand), tuple(normalise(i.name) for i in entry.ingredients))
    for brand, names in BRANDS.items():
        out.setdefault(brand, tuple(normalise(n) for n in names))
    return out


def drug_words(name: str) -> str:
    """A drug name without its salt words (``metoprolol succinate`` -> ``metoprolol``), normalised."""
    key = normalise(name)
    return " ".join(w for w in key.split() if w not in SALTS) or key


def brands_of(names: tuple[str, ...] | list[str]) -> list[str]:
    """Every brand (normalised) whose ingredients are exactly ``names`` (salts aside)."""
    want = sorted(drug_words(n) for n in names)
    return [b for b, ings in _catalog_brands().items() if sorted(drug_words(i) for i in ings) == want]


def variants(name: str, *, drug: bool) -> list[str]:
    """Every phrase that names ``name`` (normalised, American spelling): itself, its synonyms, abbreviations.

    A drug also gets its name without salt words; a condition or result gets the abbreviations of
    every ``ABBREVIATIONS`` concept phrase its words contain.
    """
    key = spelling(name)
    out = [key, *SYNONYMS.get(key, ()), *([] if drug else same_concept(name))]
    if not drug and " [" in name:  # a LOINC name: "Hematocrit [Volume Fraction] of Blood" is a "hematocrit"
        out.append(spelling(name[:name.index(" [")]))
    if drug:
        out.append(drug_words(key))
    for phrase, abbreviations in ABBREVIATIONS.items():
        if any(contains(v, phrase) for v in list(out)):
            # a result named by the measure it is part of: "Systolic Blood Pressure" is a "blood pressure"
            out += [*abbreviations, *([phrase] if not drug and phrase in _RESULT_PHRASES else [])]
    return list(dict.fromkeys(o for o in out if o))
