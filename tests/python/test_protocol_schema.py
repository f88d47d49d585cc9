"""The worker's side of the protocol against its one description, protocol.schema.json: the request
parser's fields, defaults and choices, and the response's fields. Every response the worker tests
produce is checked against it too (conftest.evaluate)."""

import dataclasses
from typing import Any, Dict

import pytest

from mblast_worker import request as request_module
from mblast_worker import response as response_module
from mblast_worker.errors import RequestError
from protocol_schema import definition, errors, request_errors, response_errors


def _defaults(name: str) -> Dict[str, Any]:
    return {k: v["default"] for k, v in definition(name)["properties"].items() if "default" in v}


def test_the_request_parser_has_the_schemas_fields_defaults_and_choices() -> None:
    properties = definition("request")["properties"]
    assert {f.name for f in dataclasses.fields(request_module.Request)} == set(properties)
    parsed = request_module.parse_request({"op": "ceilings"})
    for key, default in _defaults("request").items():
        assert getattr(parsed, key) == default, key
    assert list(request_module.OPS) == properties["op"]["enum"]
    assert list(request_module.POLICIES) == properties["tolerance_policy"]["enum"]
    assert list(request_module.BASELINES) == properties["baselines"]["items"]["enum"]


def test_timing_and_ceilings_have_the_schemas_fields_and_defaults() -> None:
    timing = request_module.TimingConfig()
    assert {f.name for f in dataclasses.fields(timing)} == set(definition("timing")["properties"])
    for key, default in _defaults("timing").items():
        assert getattr(timing, key) == default, key
    assert {f.name for f in dataclasses.fields(request_module.DeviceCeilings)} == set(
        definition("device_ceilings")["properties"])


def test_a_request_with_every_field_conforms_and_parses() -> None:
    full = {"op": "eval", "problem": "/p.py", "candidate": "/c.py", "device": "cpu", "seeds": [3, 4],
            "init_seed": 7, "atol": 1e-3, "rtol": 1e-3, "tolerance_policy": "strict",
            "timing": {"runs": 3, "warmup": 0, "input_sets": 1, "l2_flush": False, "autograd": False},
            "baselines": ["eager", "compile"], "cache_dir": "/cache", "allow_tf32": True,
            "device_ceilings": {"bandwidth_gbs": 4000, "peak_tflops": 60, "peak_tflops_tf32": None},
            "timeout_s": 30, "profile": True}
    assert request_errors(full) == []
    parsed = request_module.parse_request(full)
    assert parsed.seeds == [3, 4] and parsed.timing is not None and parsed.timing.runs == 3
    assert request_errors({**full, "timing": None, "device_ceilings": None}) == []


@pytest.mark.parametrize("bad", [
    {"op": "bogus"},
    {"op": "eval", "seeds": []},
    {"op": "eval", "tolerance_policy": "loose"},
    {"op": "eval", "baselines": ["eager", "max-autotune"]},
    {"op": "eval", "timing": {"runs": 0}},
    {"op": "eval", "atol": True},
])
def test_what_the_schema_refuses_the_parser_refuses(bad: Dict[str, Any]) -> None:
    assert request_errors(bad)
    with pytest.raises(RequestError):
        request_module.parse_request({"problem": "/p.py", "candidate": "/c.py", **bad})


def test_the_response_has_exactly_the_schemas_fields() -> None:
    empty = response_module.Response().to_dict()
    assert set(empty) == set(definition("response")["properties"])
    assert response_errors(empty) == []


@pytest.mark.parametrize("part,schema", [
    (response_module.Tolerance, "tolerance"), (response_module.ErrLocation, "err_location"),
    (response_module.OutputSpec, "outputs"), (response_module.Trial, "trials"),
])
def test_the_responses_parts_have_the_schemas_fields(part: Any, schema: str) -> None:
    described = definition("response")["properties"][schema]
    described = described.get("items", described)
    names = {f.name for f in dataclasses.fields(part)}
    if part is response_module.Trial:  # "pass" is a Python keyword: the dataclass says "passed"
        names = names - {"passed"} | {"pass"}
    assert names == set(described["properties"])


def test_timing_stats_have_the_schemas_fields() -> None:
    assert {f.name for f in dataclasses.fields(response_module.TimingStats)} == set(
        definition("timing_stats")["properties"])


def test_the_checker_reports_what_breaks_the_schema() -> None:
    wrong = response_module.Response().to_dict()
    wrong["speedup"] = "fast"
    wrong["surprise"] = 1
    del wrong["notes"]
    found = "\n".join(response_errors(wrong))
    assert "$.speedup" in found and "surprise is not a field" in found and "notes is missing" in found
    with pytest.raises(ValueError):
        errors(1, {"pattern": "x"})
