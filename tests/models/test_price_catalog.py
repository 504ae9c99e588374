"""Any model priced from a maintained catalogue (genai-prices), each priced call naming its price source."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from groundeval.models import price_catalog
from groundeval.models.price_file import load_price_file
from groundeval.models.pricing import context_window, cost_usd, price_for, price_source, priced, use_prices
from groundeval.models.providers.openai_compat import openai_usage
from tests._paths import REPO

pytest.importorskip("genai_prices", reason="the prices extra")


@pytest.fixture
def clean_prices() -> Iterator[None]:
    yield
    use_prices({})


def test_the_catalogue_agrees_with_the_packaged_claude_list_on_a_call_with_cache_traffic() -> None:
    # Two independent sources for the same published prices (Anthropic's pricing page): groundeval's
    # own list (checked 2026-11-29) and genai-prices' snapshot; they must give the same cost.
    counts = {"input_tokens": 3_000, "output_tokens": 700, "cache_creation_input_tokens": 2_000,
              "cache_read_input_tokens": 5_000, "cache_write_1h_tokens": 500}
    listed = cost_usd("claude-opus-4-8", **counts)
    assert price_for("claude-opus-4-8") is not None and listed is not None
    assert price_catalog.cost("claude-opus-4-8", **counts) == pytest.approx(listed)


def test_a_model_beyond_the_claude_list_is_priced_from_the_catalogue_with_its_source() -> None:
    model = "gpt-4o-mini"
    assert price_for(model) is None  # not in the packaged list
    # OpenAI lists gpt-4o-mini at $0.15 input, $0.075 cached input, $0.60 output per million tokens
    cost = cost_usd(model, input_tokens=900, output_tokens=50, cache_read_input_tokens=100)
    assert cost == pytest.approx((900 * 0.15 + 100 * 0.075 + 50 * 0.60) / 1e6)
    assert price_source(model) == price_catalog.source()
    assert context_window(model) is None  # a catalogue price says nothing of a Claude context window


def test_the_source_names_the_locked_release_and_its_date() -> None:
    lock = (REPO / "uv.lock").read_text()
    block = re.search(r'name = "genai-prices"\nversion = "([^"]+)"\n(?:.*\n)*?sdist = .*upload-time = "(\d{4}-\d\d-\d\d)', lock)
    assert block is not None
    version, date = block.groups()
    assert price_catalog.source() == f"genai-prices {version} (data of {date})"


def test_a_user_price_file_wins_over_the_catalogue(tmp_path: Path, clean_prices: None) -> None:
    path = tmp_path / "prices.toml"
    path.write_text('[models."gpt-4o-mini"]\ninput = 1\noutput = 2\n')
    use_prices(load_price_file(path))
    assert cost_usd("gpt-4o-mini", input_tokens=1_000_000, output_tokens=0) == pytest.approx(1.0)
    assert price_source("gpt-4o-mini") == "prices from prices.toml"


def test_an_unknown_model_stays_unpriced_and_names_no_source() -> None:
    assert cost_usd("my-own-finetune-7b", input_tokens=10, output_tokens=10) is None
    assert price_source("my-own-finetune-7b") is None
    assert "price_source" not in priced("my-own-finetune-7b", {"cost_usd": None})


def test_every_priced_openai_compatible_call_records_its_price_source() -> None:
    usage = SimpleNamespace(prompt_tokens=1_000, completion_tokens=20, prompt_tokens_details=None)
    priced_call = openai_usage("gpt-4o-mini", usage)
    assert priced_call["cost_usd"] == pytest.approx((1_000 * 0.15 + 20 * 0.60) / 1e6)
    assert priced_call["price_source"] == price_catalog.source()
    assert priced_call["price_source"].startswith("genai-prices ")
    assert "price_source" not in openai_usage("my-own-finetune-7b", usage)
    assert openai_usage("claude-opus-4-8", usage)["price_source"].startswith("groundeval Claude list prices")


def test_the_run_aggregate_names_the_price_sources_of_its_cases() -> None:
    from groundeval.records.aggregate import summarize
    from groundeval.records.run_record import CaseRecord
    from groundeval.scoring import Metric
    from groundeval.tasks.extraction.task import ExtractionTask

    def case(case_id: str, usage: dict[str, Metric]) -> CaseRecord:
        return CaseRecord(case_id=case_id, nodeid=case_id, run_id="r", task="extraction", agent="a",
                          outcome="passed", counted=True, usage=usage)

    cases = [case("a", openai_usage("gpt-4o-mini", SimpleNamespace(prompt_tokens=10, completion_tokens=1))),
             case("b", openai_usage("claude-opus-4-8", SimpleNamespace(prompt_tokens=10, completion_tokens=1)))]
    usage = summarize(ExtractionTask(), cases).usage
    assert usage["price_source"] == "; ".join(sorted({price_catalog.source() or "", cases[1].usage["price_source"]}))
    assert isinstance(usage["cost_usd"], float) and usage["cost_usd"] > 0


def test_every_claude_list_price_the_catalogue_also_has_agrees_with_it() -> None:
    from groundeval.models.pricing import PRICES

    counts = {"input_tokens": 10_000, "output_tokens": 1_000, "cache_creation_input_tokens": 2_000,
              "cache_read_input_tokens": 5_000}
    both = {stem: price_catalog.cost(stem, **counts) for stem in PRICES}
    compared = {stem: cost for stem, cost in both.items() if cost is not None}
    assert len(compared) >= len(PRICES) - 2  # 0.2.5 lacks only the Mythos 5 / 5.1 ids
    for stem, cost in compared.items():
        assert cost == pytest.approx(cost_usd(stem, **counts), abs=1e-9), stem


def test_a_langgraph_agents_summed_usage_keeps_the_price_source_only_when_priced() -> None:
    from langchain_core.messages import AIMessage

    from groundeval.agents._langgraph_trace import message_usage

    replies = [AIMessage(content="x", usage_metadata={"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}),
               AIMessage(content="y", usage_metadata={"input_tokens": 50, "output_tokens": 5, "total_tokens": 55})]
    usage = message_usage(replies, "claude-opus-4-8")
    assert usage["input_tokens"] == 150 and usage["cost_usd"] == pytest.approx((150 * 5 + 15 * 25) / 1e6)
    assert usage["price_source"] == price_source("claude-opus-4-8")
    assert "price_source" not in message_usage(replies, "my-own-finetune-7b")
