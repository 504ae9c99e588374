"""The summary task's judges: a model over the model layer, and the rule-based ``baseline``.

A judge decides one rubric criterion for one summary (``Judge.decide``) and answers a
``Verdict``: ``met`` (the summary does what the criterion describes; for a ``must_not_state``
criterion, true means it makes the mistake), the quoted ``evidence``, and the usage it cost.

* ``ModelJudge`` asks a ``Model`` of role ``judge`` (``models.get_model(spec, role="judge")``: the
  one retry, deadline, pricing, spending and redaction policy of every model call) through the
  generic model-graded scorer (``scorers.model_graded.ModelGrader``: response cache, unreachable
  rule, usage) with the fixed ``SYSTEM_PROMPT`` and ``USER_TEMPLATE`` (their SHA-256 is
  ``PROMPT_SHA256``), one request per criterion (the executor asks a case's criteria concurrently:
  ``question``, ``execution.score_stage``), and reads ``{"met": true|false, "evidence": "<quote from
  the summary>"}``. A ``met`` verdict whose evidence is not in the summary counts as not met and is
  flagged (``evidence_not_in_summary``). A reply that is not such an object is the judge's own
  failure to answer, not groundeval's: the criterion gets a ``Verdict`` flagged ``no_answer`` (an
  empty reply) or ``format_not_ok`` (text that holds no verdict object), with the call's usage, and
  the scorer counts it and fails the case on it (``scorer``). A model failure raises ``JudgeError``:
  the case is classed by the model's error (``infra_error`` excluded and counted; ``auth_error`` and
  ``config_error`` stop the run), never a wrong summary.
* ``BaselineJudge`` decides by rule: names with their synonyms, cited clinical abbreviations and
  brands (``synonyms``), each mention read in its section, list, sentence and ConText
  (``reading``). It never calls a model; it cannot see a paraphrase its tables lack (its
  calibration card shows that in numbers).

``judge_identity(judge)`` is what a judge card is keyed by, with the prompt's SHA-256: a GGUF's
file SHA-256 for a local model (moving or renaming the file keeps its card), the provider's model
id otherwise, ``baseline`` for the rule-based judge.

``make_judge(spec)`` builds one from ``--groundeval-judge``: ``baseline``, a model spec
(``anthropic/<model>``, ``openai-compatible/<name>@<url>``, ``local/<gguf>``) or
``package.module:attribute`` naming a ``Judge`` or a ``Model`` object (``ScriptedModel`` in tests).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from groundeval.models.base import Model
from groundeval.models.reachability import UNREACHABLE_AFTER
from groundeval.parsing import extract_json
from groundeval.scorers.judge_card import judge_identity
from groundeval.scorers.model_graded import (
    NO_VERDICT_FLAGS,
    GraderModel,
    JudgeError,
    ModelGrader,
    Question,
    Verdict,
)
from groundeval.tasks.summary.matching import item_mentions
from groundeval.tasks.summary.reading import CONTEXT_RULES, SECTION_RULES
from groundeval.tasks.summary.reading_layout import none_under
from groundeval.tasks.summary.reading_rules import DROPPED_DEFAULT_RULES
from groundeval.tasks.summary.synonyms import ABBREVIATIONS, BRANDS, SALTS, SYNONYMS
from groundeval.tasks.summary.text import ENDED_WORDS, RESOLVED_WORDS, normalise, sentences
from groundeval.tasks.summary.values import lab_verdict

if TYPE_CHECKING:
    from groundeval.models.cache_store import ResultCache

JudgeModel = GraderModel
"""What ``ModelJudge`` needs of a ``Model`` (``scorers.model_graded.GraderModel``)."""

__all__ = [
    "BASELINE_SHA256",
    "JUDGE_MAX_TOKENS",
    "NO_VERDICT_FLAGS",
    "PROMPT_SHA256",
    "SYSTEM_PROMPT",
    "UNREACHABLE_AFTER",
    "USER_TEMPLATE",
    "BaselineJudge",
    "Judge",
    "JudgeError",
    "JudgeModel",
    "ModelJudge",
    "Verdict",
    "judge_identity",
    "make_judge",
    "parse_verdict",
    "question",
    "rejects_temperature",
]

JUDGE_MAX_TOKENS = 512
"""Output limit of one judge call, tokens (a verdict is a short JSON object)."""

SYSTEM_PROMPT = """\
You grade one criterion of a clinical handoff summary written from a patient's record.

Read the criterion and the summary. Decide whether the summary does what the criterion describes.
Some criteria describe a mistake (for example stating a stopped medication as current): for those,
"met" is true when the summary makes that mistake.

A summary may name a drug, a problem or a result in other words than the criterion (a synonym, a
brand or generic name, a common abbreviation): judge the meaning, not the wording. A drug or
problem mentioned as stopped, past, resolved or historical is not stated as current. A drug or
problem labelled both current and ended (for example "past/current", "active or resolved") is a
hedge: it does not count as mentioned, and it does count as stated as current.

Answer with one JSON object and nothing else:
{"met": true or false, "evidence": "<an exact, contiguous quote from the summary>"}
When met is true, the evidence must be copied exactly from the summary and show it. When met is
false, the evidence is "".
"""

USER_TEMPLATE = "Criterion: {criterion}\n\nSummary:\n<<<\n{summary}\n>>>"
"""The user message: ``criterion`` is the criterion's ``statement``, ``summary`` the agent's text."""

PROMPT_SHA256 = hashlib.sha256((SYSTEM_PROMPT + "\n" + USER_TEMPLATE).encode("utf-8")).hexdigest()
"""SHA-256 of the judge prompt (system prompt and user template): a judge card holds for this hash only."""


@runtime_checkable
class Judge(Protocol):
    """Decides rubric criteria.

    Attributes:
        spec: What ``--groundeval-judge`` named (``baseline``, ``anthropic/claude-opus-4-8``).
        prompt_sha256: SHA-256 of what pins its decisions (the prompt, or the baseline's rules).
        costs_nothing: True when deciding calls no model (no tokens, no spend).
    """

    spec: str
    prompt_sha256: str
    costs_nothing: bool

    def settings(self) -> dict[str, Any]:
        """JSON-safe facts that pin the judge: ``spec``, ``model``, ``temperature``, ``max_tokens``, prompt hash."""
        ...

    def decide(self, criterion: Mapping[str, Any], summary: str, *, label: str) -> Verdict:
        """Decide ``criterion`` (a rubric dict) for ``summary``.

        Raises:
            JudgeError: No verdict (the model failed or did not answer a verdict).
        """
        ...


def _quote_in(quote: str, summary: str) -> bool:
    """True when the quote appears in the summary, compared after ``normalise`` (case, spacing, punctuation)."""
    needle = normalise(quote)
    return bool(needle) and needle in normalise(summary)


def parse_verdict(raw: str, summary: str, label: str) -> tuple[bool, str, str | None]:
    """``(met, evidence, flag)`` from a judge's reply.

    A reply with no JSON object holding a boolean ``met`` is no verdict: ``(False, <the reply's
    first 200 characters>, "no_answer")`` when it is blank, ``(..., "format_not_ok")`` otherwise
    (``NO_VERDICT_FLAGS``). The caller counts it; it is never a harness error, since it is the
    judge's answer, not groundeval's failure.
    """
    del label
    if not raw.strip():
        return False, "", "no_answer"
    parsed = extract_json(raw, "{", lambda v: isinstance(v, dict) and isinstance(v.get("met"), bool), None)
    if not isinstance(parsed.value, dict):
        return False, raw.strip()[:200], "format_not_ok"
    met = bool(parsed.value["met"])
    evidence = str(parsed.value.get("evidence") or "")
    if met and not _quote_in(evidence, summary):
        return False, evidence, "evidence_not_in_summary"
    return met, evidence, None


class ModelJudge:
    """A judge that asks a ``Model`` (role ``judge``) one question per criterion.

    The summary task's prompt (``SYSTEM_PROMPT``, ``USER_TEMPLATE``) and verdict reading
    (``parse_verdict``) over the generic model-graded scorer (``scorers.model_graded.ModelGrader``:
    the call, the response cache, the unreachable rule, the usage).

    Args:
        model: The model (``models.get_model(spec, role="judge")`` or a ``ScriptedModel``).
        spec: The spec to record (default: the model's own).
        cache: Where replies are kept (``--groundeval-judge-cache``), or None. The key is the
            SHA-256 of the judge's settings (spec, model id, temperature, max tokens, prompt SHA-256)
            and the full request (system prompt, user message with the criterion and the summary),
            so a changed judge, prompt or summary is asked again; the reply is stored redacted
            (``models.response_cache``) and parsed again on a hit.
    """

    costs_nothing = False
    prompt_sha256 = PROMPT_SHA256

    def __init__(self, model: JudgeModel, spec: str | None = None, cache: ResultCache | None = None) -> None:
        from groundeval.models.response_cache import ResponseCache

        self.model = model
        self.spec = spec or model.spec
        self.grader = ModelGrader(
            model, spec=self.spec, system=SYSTEM_PROMPT, prompt_sha256=PROMPT_SHA256, max_tokens=JUDGE_MAX_TOKENS,
            parse=lambda raw, summary: parse_verdict(raw, summary, ""),
            cache=None if cache is None else ResponseCache(cache),
        )

    def close(self) -> None:
        """Close the model (a ``local/<gguf>`` judge stops its llama.cpp server); safe to call again."""
        close = getattr(self.model, "close", None)
        if callable(close):
            close()

    def settings(self) -> dict[str, Any]:
        """The model's settings (``spec``, ``role``, ``model``, ``max_tokens``, ``temperature``) and prompt hash."""
        return self.grader.settings()

    def decide(self, criterion: Mapping[str, Any], summary: str, *, label: str) -> Verdict:
        """One model call (or a cached reply); see ``parse_verdict`` and ``ModelGrader.grade``.

        Raises:
            JudgeError: The model raised an ``AgentError`` (kept as ``error``); a ``RunStopError``
                once the judge looks unreachable (``models.reachability``).
        """
        user = USER_TEMPLATE.format(criterion=criterion["statement"], summary=summary)
        return self.grader.grade(user, summary, label=label)

    @property
    def identity(self) -> str:
        """What the judge's card is keyed by (with the prompt hash): see ``judge_identity``."""
        provider = getattr(self.model, "api", None)  # a PolicyModel's provider (models.providers)
        path = getattr(provider, "model_path", None)
        if isinstance(path, Path):
            return f"sha256:{_file_sha256(path)}"
        model = self.model.settings().get("model")
        return str(model) if model else self.spec


def question(judge: Judge, criterion: Mapping[str, Any], summary: str, *, label: str) -> Question:
    """The ``Question`` that asks ``judge`` to decide ``criterion`` for ``summary`` (``execution.score_stage``)."""
    reach = getattr(getattr(judge, "grader", None), "reachability", None)
    return Question(key=str(criterion["id"]), ask=lambda: judge.decide(criterion, summary, label=label),
                    costs_nothing=judge.costs_nothing, alone=reach is not None and reach.answered == 0)


NONE_NOUNS: dict[str, tuple[str, ...]] = {
    "no_condition": ("problem", "diagnos", "condition", "disorder", "disease", "issue", "illness",
                     "medical history", "pmh", "dx"),
    "no_medication": ("medication", "medicine", "drug", "prescription", "meds"),
}
"""Nouns that, right after a negation ("no active diagnoses", "no active medical issues", "no
significant past medical history", "not on any medication"), or before a "none"/"nil" ("PMH: nil",
"Medications: none"), say that no diagnosis (medication) is recorded ("dx" is the clinical
abbreviation of diagnosis: UMLS SPECIALIST Lexicon, LRABR). For diagnoses, a negation followed by
a named problem ("No appendicitis, no gingival disease") says nothing of the class: the noun must come
within three words of the negation, with only qualifiers between (``none_stated``); for medications a
negation and a noun anywhere in one sentence still count."""

_QUALIFIERS = (r"(?:(?:active|current|chronic|significant|known|other|ongoing|recorded|documented|relevant|major"
               r"|medical|past|regular|any|further|long term|longstanding)\s+(?:(?:or|and)\s+)?){0,3}")


def none_stated(sentence: str, nouns: tuple[str, ...]) -> bool:
    """True when ``sentence`` says no item of ``nouns``' class is recorded (see ``NONE_NOUNS``)."""
    low = normalise(sentence)
    noun = "(?:" + "|".join(re.escape(n) for n in nouns) + ")"
    return bool(re.search(rf"(?<![a-z])(?:no|nil|not any|not on any|without|none of the)\s+{_QUALIFIERS}{noun}", low)
                or re.search(rf"(?<![a-z]){noun}\w*(?:\s+list)?\s+(?:is\s+|are\s+)?"
                             rf"(?:none|nil|unremarkable|empty|negative)(?![a-z])", low)
                or re.search(rf"(?<![a-z])nothing\s+(?:active|current|ongoing)\s+(?:on|in)\s+(?:the\s+)?{noun}", low)
                or re.search(rf"(?<![a-z])nothing\s+(?:on|in)\s+(?:the\s+|his\s+|her\s+|their\s+)?[a-z ]{{0,20}}?"
                             rf"(?:is|are)\s+(?:an?\s+)?(?:active|current|ongoing)\s+{noun}", low))

BASELINE_SHA256 = hashlib.sha256(
    json.dumps({"abbreviations": ABBREVIATIONS, "synonyms": SYNONYMS, "brands": BRANDS, "salts": SALTS,
                "ended": ENDED_WORDS, "none": NONE_NOUNS, "sections": SECTION_RULES, "context": CONTEXT_RULES,
                "resolved": RESOLVED_WORDS, "qualifiers": _QUALIFIERS, "dropped": sorted(DROPPED_DEFAULT_RULES),
                "version": 10},
               sort_keys=True).encode("utf-8")
).hexdigest()
"""SHA-256 of the baseline judge's rules (its "prompt"): a judge card holds for this hash only.
``version`` is the rules version (docs/tasks/summary.md, "Rules version 10"): raised whenever the
reading code changes what it decides, so a card made by older rules stops matching."""

_NOT_CURRENT = frozenset({"ended", "negated"})


class BaselineJudge:
    """The rule-based judge: no model, no key, no cost; what reading the text by rule can decide.

    Names count by their synonyms, clinical abbreviations (``synonyms.ABBREVIATIONS``, looked up
    by the concept phrases a name contains, never by the whole name), brands and salt-free drug
    names (``matching.item_mentions``); each mention has the status ``reading.read`` gives it
    (sections, lead-ins, tables, ConText negation and history, hedges and collective qualifiers).

    * must-mention a problem or drug: named with status ``current`` (not as an allergy); a problem
      named as history ("prior stroke", "had an MI in 2015") counts too unless its sentence says
      it is over (``reading.Mention.over``: "resolved", "healed", under ``Past:`` or ``Inactive``);
    * must-mention an allergy: named as an allergy (under an allergy heading, or in a sentence
      with a word starting ``allerg``), not negated;
    * must-mention a result: the number(s) right after the result's name are its values
      (``values.lab_verdict``);
    * must-not-state an ended drug or problem as current: named with status ``current`` or
      ``hedged`` (a hedge states the forbidden thing);
    * the record holds no active diagnosis (medication): a sentence negates a noun of
      ``NONE_NOUNS`` as a class (``none_stated``: "no active medical issues", "PMH: nil"), or a
      "none" line sits under a heading naming one.

    A hedged mention mentions nothing. The evidence is the sentence that decided.
    """

    spec = "baseline"
    identity = "baseline"
    costs_nothing = True
    prompt_sha256 = BASELINE_SHA256

    def settings(self) -> dict[str, Any]:
        """``spec``, ``model`` (None), ``temperature`` (None), ``max_tokens`` (None) and ``prompt_sha256``."""
        return {"spec": self.spec, "role": "judge", "model": None, "max_tokens": None, "temperature": None,
                "prompt_sha256": self.prompt_sha256}

    def decide(self, criterion: Mapping[str, Any], summary: str, *, label: str) -> Verdict:
        """Decide by the rules of the class docstring (never raises for a summary)."""
        del label
        ctype = criterion["type"]
        if ctype in ("no_condition", "no_medication"):
            nouns = NONE_NOUNS[ctype]
            under = none_under(summary, nouns)
            if under:
                return Verdict(True, under)
            for s in sentences(summary):
                low = f" {normalise(s)} "
                loose = ctype == "no_medication" and any(w in low for w in (" no ", " none ", " nil ", " not any ")) \
                    and any(n in low for n in nouns)  # a drug named after "no" is never a medication taken
                if loose or none_stated(s, nouns):
                    return Verdict(True, s)
            return Verdict(False)
        if ctype == "lab":
            met, evidence = lab_verdict(criterion, summary, strict=False)
            return Verdict(bool(met), evidence if met else "")
        mentions = item_mentions(criterion, summary, strict=False)
        if criterion["kind"] == "must_not_state":
            found = mentions.hedged() or mentions.named(frozenset({"current"}))
            return Verdict(True, found.sentence) if found else Verdict(False)
        if mentions.hedged() is not None:
            return Verdict(False)
        if ctype == "allergy":
            found = mentions.named(frozenset({"current", "ended"}), allergy=True)
        else:
            found = mentions.named(frozenset({"current"}))
            if found is None and ctype == "condition":  # "prior stroke", "HTN (dx 2010)": still on the list
                found = next((m for m in mentions.named_all(frozenset({"ended"})) if not m.over), None)
        return Verdict(True, found.sentence) if found else Verdict(False)


@functools.cache
def _file_sha256_at(path: Path, size: int, mtime_ns: int) -> str:
    del size, mtime_ns  # part of the cache key: a file replaced in place is hashed again
    from groundeval.models.providers.local import file_sha256

    return file_sha256(path)


def _file_sha256(path: Path) -> str:
    stat = path.stat()
    return _file_sha256_at(path.resolve(), stat.st_size, stat.st_mtime_ns)


def rejects_temperature(spec: str) -> bool:
    """True for a model that answers an explicit temperature with a 400 (the judge then sends none).

    The model layer's rule (``models.rejects_temperature``): Claude Opus 4.7 and later, and
    ``anthropic`` alone, whose default is one.
    """
    from groundeval.models import rejects_temperature as model_rejects

    return model_rejects(spec)


def make_judge(spec: str, *, options: Mapping[str, Any] | None = None, http_client: Any = None,
               cache: ResultCache | None = None) -> Judge:
    """The judge ``--groundeval-judge`` names.

    Args:
        spec: ``baseline``; a model spec (``anthropic/claude-sonnet-5-5``,
            ``openai-compatible/<name>@<url>``, ``local/<gguf>``); or ``package.module:attribute``
            naming a ``Judge`` or a ``Model``.
        options: Model options (``max_retries``, ``timeout`` seconds); ``temperature`` 0 (unless
            ``rejects_temperature``) and ``max_tokens`` ``JUDGE_MAX_TOKENS`` are set here.
        http_client: An ``httpx2.Client`` for the provider's SDK (tests).
        cache: Where a model judge keeps its replies (``ModelJudge``); the baseline needs none.

    Raises:
        ConfigError: An unknown provider, a missing SDK or key, or an attribute that is neither.
    """
    from groundeval.errors import ConfigError

    spec = spec.strip()
    if spec == "baseline":
        return BaselineJudge()
    if ":" in spec and "/" not in spec.partition(":")[0]:  # package.module:attribute
        from groundeval.registry import load_target

        found = load_target(spec, spec, kind="judge", builtin=False)
        if isinstance(found, Judge):
            return found
        if isinstance(found, Model):
            return ModelJudge(found, spec, cache)
        raise ConfigError(f"judge {spec!r}: the attribute is neither a Judge (decide, settings) nor a Model")
    from groundeval.models import get_model, parse_spec

    try:
        parse_spec(spec)
    except ConfigError as exc:
        from groundeval.errors import did_you_mean

        near = did_you_mean(spec, ["baseline"])
        raise ConfigError(f"judge {spec!r}{near}: {exc}; or baseline (rule-based, no model), or "
                          "package.module:attribute naming a Judge or a Model") from None
    merged = {"max_tokens": JUDGE_MAX_TOKENS, **dict(options or {})}
    if not rejects_temperature(spec):
        merged.setdefault("temperature", 0.0)
    model = get_model(spec, role="judge", options=merged, owner=f"the judge {spec}", http_client=http_client)
    return ModelJudge(model, spec, cache)
