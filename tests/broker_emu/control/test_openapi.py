"""The OpenAPI document (GET /openapi.json) and the route table cannot drift: every route is
in the document, every documented operation is a route, with the same query parameters."""

import re

from broker_emu.control.openapi import OPENAPI
from broker_emu.control.routes import ROUTES

from .serve import Served, http_call


def documented():
    return {(method.upper(), path) for path, ops in OPENAPI["paths"].items() for method in ops}


def test_every_route_is_documented_and_every_documented_operation_is_a_route():
    routes = {(method, template) for method, template, _, _ in ROUTES}
    assert routes - documented() == set(), "routes missing from the OpenAPI document"
    assert documented() - routes == set(), "documented operations that are not routes"


def test_query_and_path_parameters_match():
    for method, template, _, query in ROUTES:
        params = OPENAPI["paths"][template][method.lower()].get("parameters", [])
        assert {p["name"] for p in params if p["in"] == "query"} == set(query), (method, template)
        assert {p["name"] for p in params if p["in"] == "path"} == set(re.findall(r"\{(\w+)\}", template))


def test_every_reference_resolves():
    text = repr(OPENAPI)
    for name in re.findall(r"#/components/schemas/(\w+)", text):
        assert name in OPENAPI["components"]["schemas"], name


def test_served_document_is_the_package_data_and_valid_openapi():
    import schemathesis

    with Served() as s:
        status, served = http_call(s.port, "GET", "/openapi.json")
    assert status == 200 and served == OPENAPI
    operations = [op for op in schemathesis.openapi.from_dict(served).get_all_operations()]
    assert len(operations) == len(ROUTES) and all(op.ok() for op in operations)


def test_docs_point_to_the_document():
    from .serve import ROOT
    with open(f"{ROOT}/docs/control.md") as f:
        assert "/openapi.json" in f.read()
