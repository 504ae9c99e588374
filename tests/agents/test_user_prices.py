"""Any model priced: a user price file (--groundeval-prices), checked, used for cost and for --groundeval-max-cost."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundeval.models.price_file import PriceFileError, load_price_file
from groundeval.models.pricing import batch_usage, cost_usd, price_for, use_prices
from tests._fakes.fake_openai import ChatServer, completion, serve_chat
from tests._paths import REPO

FIXTURES = REPO / "fixtures" / "extraction"
MODEL = "llama-3.3-70b-instruct"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    yield from serve_chat()


@pytest.fixture
def clean_prices() -> Iterator[None]:
    yield
    use_prices({})


def test_a_toml_price_file_prices_any_model(tmp_path: Path, clean_prices: None) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(f'[models."{MODEL}"]\ninput = 0.6\noutput = 0.8\ncached_input = 0.15\nbatch_discount = 0.25\n')
    assert price_for(MODEL) is None
    use_prices(load_price_file(path))
    # 700 uncached input at 0.6, 200 cache reads at 0.15, 30 output at 0.8 (USD per million tokens)
    cost = cost_usd(MODEL.upper(), input_tokens=700, output_tokens=30, cache_read_input_tokens=200)
    assert cost == pytest.approx((700 * 0.6 + 200 * 0.15 + 30 * 0.8) / 1e6)
    assert batch_usage({"cost_usd": 1.0}, MODEL)["cost_usd"] == pytest.approx(0.25)  # the file's discount
    assert batch_usage({"cost_usd": 1.0}, "claude-opus-4-8")["cost_usd"] == pytest.approx(0.5)  # the list's


def test_a_json_price_file_overrides_a_list_price(tmp_path: Path, clean_prices: None) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"claude-opus-4-8": {"input": 1, "output": 2}}}))
    use_prices(load_price_file(path))
    assert cost_usd("claude-opus-4-8", input_tokens=1_000_000, output_tokens=0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[models."m"]\ninput = 1\n', "prices.toml: model 'm' is missing 'output'"),
        ('[models."m"]\ninput = -1\noutput = 1\n', "prices.toml: model 'm', field 'input' is -1; give a number >= 0"),
        ('[models."m"]\ninput = "cheap"\noutput = 1\n', "field 'input' is 'cheap'"),
        ('[models."m"]\ninput = 1\noutput = 1\nbatch_discount = 50\n', "field 'batch_discount' is 50; give a fraction"),
        ('[models."m"]\ninput = 1\noutput = 1\ncache = 1\n', "model 'm' has unknown field(s) 'cache'; the fields are"),
        ("input = 1\n", "prices.toml: no 'models' table"),
        ('[models."m"\n', "prices.toml: not valid TOML"),
    ],
)
def test_a_wrong_price_file_names_file_model_field_and_fix(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(PriceFileError) as exc:
        load_price_file(path)
    assert message in str(exc.value)


def _run(pytester: pytest.Pytester, server: ChatServer, *extra: str) -> pytest.RunResult:
    server.replies = [lambda body: completion("[]", prompt=900, out=30, cached=0)]
    data = pytester.path / "data"
    data.mkdir(exist_ok=True)
    for prefix in ("Liz_Conn", "Clemente_Kreiger"):
        (src,) = FIXTURES.glob(f"{prefix}_*.json")
        shutil.copy(src, data / src.name)
    (pytester.path / "prices.toml").write_text(f'[models."{MODEL}"]\ninput = 2.0\noutput = 10.0\n')
    # in a subprocess: an in-process run drops the modules it imported (the HTTP stack's among them),
    # and a later test in this process would then hold classes of two imports of one module
    return pytester.runpytest_subprocess(
        "--groundeval-task=extraction",
        "--groundeval-agent=openai-compatible",
        f"--groundeval-base-url={server.url}",
        f"--groundeval-model={MODEL}",
        "--groundeval-data-dir=data",
        "--groundeval-concurrency=1",
        "-p",
        "no:cacheprovider",
        *extra,
    )


def _record(pytester: pytest.Pytester) -> dict[str, Any]:
    (path,) = (pytester.path / "runs").glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_max_cost_holds_an_openai_compatible_model_priced_by_the_user(
    server: ChatServer, pytester: pytest.Pytester
) -> None:
    refused = _run(pytester, server, "--groundeval-max-cost=1")  # no price: refused, no call made
    assert refused.ret == pytest.ExitCode.USAGE_ERROR and not server.requests
    refused.stderr.fnmatch_lines(["*no known price*--groundeval-prices*"])
    _run(pytester, server, "--groundeval-max-cost=1", "--groundeval-prices=prices.toml")
    record = _record(pytester)
    per_call = (900 * 2.0 + 30 * 10.0) / 1e6
    assert [c["usage"]["cost_usd"] for c in record["cases"]] == pytest.approx([per_call, per_call])
    assert (
        len(server.requests) == 2
        and record["complete"]
        and record["aggregate"]["usage"]["cost_usd"] == pytest.approx(2 * per_call)
    )


def test_the_stop_message_shows_spent_reserved_and_the_limit(server: ChatServer, pytester: pytest.Pytester) -> None:
    result = _run(pytester, server, "--groundeval-max-cost=0.000001", "--groundeval-prices=prices.toml")
    assert not server.requests  # the first call's estimate is already over the limit
    record = _record(pytester)
    assert not record["complete"]
    assert (
        "--groundeval-max-cost 1e-06 USD reached: $0.0000 spent, $0.0000 reserved for calls in flight, "
        "limit $0.0000; the next call" in record["stop_reason"]
    )
    result.stdout.fnmatch_lines(["INCOMPLETE: groundeval: --groundeval-max-cost 1e-06 USD reached*"])


def test_a_wrong_price_file_is_a_usage_error(pytester: pytest.Pytester, server: ChatServer) -> None:
    (pytester.path / "bad.json").write_text('{"models": {"x": {"input": 1}}}')
    result = _run(pytester, server, "--groundeval-prices=bad.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and not server.requests
    result.stderr.fnmatch_lines(["*--groundeval-prices: *bad.json: model 'x' is missing 'output'*"])


def test_max_cost_holds_a_catalogue_priced_model_with_no_price_file(
    server: ChatServer, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("genai_prices", reason="the prices extra")
    from groundeval.models.price_catalog import source

    server.replies = [lambda body: completion("[]", prompt=900, out=30, cached=0, model="gpt-4o-mini")]
    data = pytester.path / "data"
    data.mkdir()
    (src,) = FIXTURES.glob("Liz_Conn_*.json")
    shutil.copy(src, data / src.name)
    result = pytester.runpytest_subprocess(
        "--groundeval-task=extraction", "--groundeval-agent=openai-compatible", f"--groundeval-base-url={server.url}",
        "--groundeval-model=gpt-4o-mini", "--groundeval-data-dir=data", "--groundeval-max-cost=1",
        "-p", "no:cacheprovider",
    )
    assert result.ret != pytest.ExitCode.USAGE_ERROR and len(server.requests) == 1
    record = _record(pytester)
    (case,) = record["cases"]
    # gpt-4o-mini: $0.15 input, $0.60 output per million tokens (OpenAI, through genai-prices)
    assert case["usage"]["cost_usd"] == pytest.approx((900 * 0.15 + 30 * 0.60) / 1e6)
    assert case["usage"]["price_source"] == record["aggregate"]["usage"]["price_source"] == source()
