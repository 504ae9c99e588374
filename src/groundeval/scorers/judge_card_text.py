"""A judge card (``scorers.judge_card``) as text: the lines ``groundeval calibrate`` prints, and a Markdown table.

Every figure is shown with its interval and n, or with the reason it has none
(``agreement.figure_text``); never as ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundeval.scorers.agreement import figure_text, interval_text
from groundeval.scorers.judge_card import set_text

__all__ = ["card_lines", "card_markdown"]


def _f(figure: Any) -> str:
    return figure_text(figure if isinstance(figure, Mapping) else None)


def _row(name: str, figures: Mapping[str, Any]) -> str:
    return (f"  {name}: kappa {_f(figures.get('kappa'))}; agreement {_f(figures.get('agreement'))}; "
            f"sensitivity {_f(figures.get('sensitivity'))}; specificity {_f(figures.get('specificity'))}")


def card_lines(card: Mapping[str, Any]) -> list[str]:
    """What ``groundeval calibrate`` prints: the set, the whole scorer, the layers, the verdicts, the labellers."""
    facts = card.get("calibration_set") or {}
    lines = [f"judge {card['judge']} (identity {str(card.get('judge_identity'))[:40]}, prompt "
             f"{str(card['prompt_sha256'])[:12]}) on {set_text(card)}"]
    if facts.get("kind") not in ("human_labels", "model_labels"):
        lines.append(f"NOT A CALIBRATION AGAINST PEOPLE: {facts.get('note', 'generated control set')}; a run shows "
                     "this judge as 'calibrated on generated text only' and does not gate its verdicts")
        lines.append(_row("judge alone, overall", card["overall"]))
        lines += [_row(name, fig) for name, fig in card["by_type"].items()]
    else:
        if facts.get("kind") == "model_labels":
            lines.append(f"NOT A CALIBRATION AGAINST PEOPLE: labelled by {facts.get('labelled_by')}; a run shows this "
                         "judge as 'calibrated on model-written labels only' and does not gate its verdicts")
        lines.append(f"reference: {facts.get('reference')}; {card.get('summaries')} summaries, {card.get('criteria')} "
                     f"labelled criteria ({card.get('not_labelled')} not labelled, {card.get('left_out')} summaries "
                     "left out)")
        lines.append(_row("whole scorer (rules + judge), per criterion", card["overall"]))
        lines += [_row(f"layer {name}", fig) for name, fig in card["by_layer"].items()]
        lines += [_row(f"{name}", fig) for name, fig in card["by_kind"].items()]
        lines += [_row(f"type {name}", fig) for name, fig in card["by_type"].items()]
        v = card["verdicts"]
        lines.append(f"  case verdicts (scorer passed vs labeller passed): agreement {_f(v['agreement'])}; kappa "
                     f"{_f(v['kappa'])}; false passes {_f(v['false_passes'])}; false fails {_f(v['false_fails'])}")
        for kind, fig in (card.get("verdicts_by_kind") or {}).items():
            lines.append(f"    {kind}: false passes {_f(fig['false_passes'])}; false fails {_f(fig['false_fails'])}")
        fl = card.get("verdicts_from_labels")
        if fl:
            lines.append(f"  the verdict rule on the labeller's own criterion labels (the rubric's reach): "
                         f"false passes {_f(fl['false_passes'])}; false fails {_f(fl['false_fails'])}")
        ir = card.get("inter_rater") or {}
        if ir.get("summaries"):
            lines.append(f"  between labellers ({ir['summaries']} summaries; {', '.join(ir['pairs'])}): criteria "
                         f"kappa {_f(ir['criteria']['kappa'])}; verdict kappa {_f(ir['verdict_kappa'])}")
        else:
            lines.append(f"  between labellers: not measured ({ir.get('why', 'one labeller')})")
    lines.append(f"judge replies with no verdict (scored as wrong): {card.get('judge_no_verdict', 0)}")
    return lines


def _md(figure: Any) -> str:
    if not isinstance(figure, Mapping) or not isinstance(figure.get("value"), int | float):
        why = figure.get("why_no_ci") if isinstance(figure, Mapping) else None
        return f"undefined ({why})" if why else "not measured"
    text = f"{figure['value']:.2f} {interval_text(figure)}"
    return text + (f" ({figure['k']}/{figure['n']})" if "k" in figure else "")


def card_markdown(card: Mapping[str, Any]) -> str:
    """A Markdown table of a card computed on human labels (the summary task's docs show its baseline's)."""
    rows = [f"Computed on {set_text(card)}, {card.get('date')}; reference: "
            f"{(card.get('calibration_set') or {}).get('reference')}.", "",
            "| measured on | n | kappa [95% CI] | sensitivity | specificity |", "| --- | --- | --- | --- | --- |"]

    def row(name: str, fig: Mapping[str, Any]) -> str:
        return f"| {name} | {fig['n']} | {_md(fig['kappa'])} | {_md(fig['sensitivity'])} | {_md(fig['specificity'])} |"

    rows.append(row("**whole scorer**", card["overall"]))
    rows += [row(f"{name}-decided criteria", fig) for name, fig in card.get("by_layer", {}).items()]
    rows += [row(f"`{name}`", fig) for name, fig in card.get("by_type", {}).items()]
    ir = card.get("inter_rater") or {}
    if ir.get("summaries"):
        rows.append(row(f"between labellers ({ir['summaries']} summaries)", ir["criteria"]))
    v = card["verdicts"]
    rows += ["", f"Case verdicts over {v['n']} summaries: agreement {_md(v['agreement'])}, kappa {_md(v['kappa'])}; "
                 f"false passes {_md(v['false_passes'])}; false fails {_md(v['false_fails'])}. Judge replies with no "
                 f"verdict: {card.get('judge_no_verdict', 0)}."]
    fl = card.get("verdicts_from_labels")
    if fl:
        rows.append(f"The verdict rule applied to the labeller's own criterion labels: false passes "
                    f"{_md(fl['false_passes'])}; false fails {_md(fl['false_fails'])} (what the rubric itself "
                    "can reach; a false pass there is a flaw no criterion describes).")
    return "\n".join(rows)
