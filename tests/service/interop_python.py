"""The real API's published Python client, ngrok-api 0.19.0, against the service.

Run by interop-python.test.ts with EDGE_URL and EDGE_KEY set; prints one JSON line per case:
{"case": name, "ok": bool, "error": str}. Each case uses the client as its documentation says
(datatype objects built with (client, props)); a case fails on any exception or assertion.

Client bug (fails against the real API too), named here and in the test: a module datatype
whose constructor wraps a nested object (EndpointOAuth wraps `provider` in an
EndpointOAuthProvider) can't be sent: extract_props hands requests a dict holding that object,
and JSON encoding fails before any request is made. The oauth cases send the same props through
a minimal stand-in with `_props` (what extract_props reads), so the wire form is still tested.
"""

import json
import os
import sys
import traceback
from types import SimpleNamespace

import ngrok
from ngrok import datatypes as dt
from ngrok.error import Error, NotFoundError

URL = os.environ["EDGE_URL"]
KEY = os.environ["EDGE_KEY"]
IDP_METADATA = os.environ["IDP_METADATA"]
client = ngrok.Client(KEY, base_url=URL)
mods = client.edge_modules
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def expect_not_found(call):
    try:
        call()
    except NotFoundError as e:
        assert e.http_status_code == 404, e.http_status_code
        assert e.error_code == "ERR_EDGE_404", e.error_code
        assert e.operation_id.startswith("op_"), e.details
        return
    raise AssertionError("expected NotFoundError")


def props(obj):
    """A datatype as sent: what extract_props reads."""
    return SimpleNamespace(_props=obj)


def new_route(edge_id, match, **kw):
    return client.edges.https_routes.create(edge_id=edge_id, match_type="path_prefix", match=match, **kw)


@case
def https_edge_create_get_delete():
    edge = client.edges.https.create(description="py", metadata="m", hostports=["py.example.com:443"])
    assert edge.id.startswith("edghts_"), edge.id
    got = client.edges.https.get(edge.id)
    assert got.description == "py" and got.metadata == "m" and got.hostports == ["py.example.com:443"]
    assert got.routes == []
    client.edges.https.delete(edge.id)
    expect_not_found(lambda: client.edges.https.get(edge.id))


@case
def https_edge_list_paged():
    ids = {client.edges.https.create(description="page").id for _ in range(3)}
    page = client.edges.https.list(limit="1")
    assert len(page.https_edges) == 1 and page.next_page_uri is not None
    seen = [e.id for e in page]  # iterates every page through next_page_uri
    assert ids <= set(seen), (ids, seen)
    assert len(seen) == len(set(seen))
    second = client.edges.https.list(before_id=page.https_edges[0].id, limit="1")
    assert second.https_edges[0].id != page.https_edges[0].id


@case
def route_create_get_update_delete():
    edge = client.edges.https.create()
    route = new_route(
        edge.id,
        "/py",
        description="d",
        metadata="meta",
        backend=dt.EndpointBackendMutate(None, {"backend_id": "bkd_py"}),
        circuit_breaker=dt.EndpointCircuitBreaker(None, {"num_buckets": 8, "error_threshold_percentage": 0.5}),
        compression=dt.EndpointCompression(None, {"enabled": False}),
    )
    assert route.edge_id == edge.id and route.match_type == "path_prefix" and route.match == "/py"
    assert route.backend.backend.id == "bkd_py" and route.backend.enabled is True
    assert route.circuit_breaker.num_buckets == 8
    assert route.compression.enabled is False
    assert route.ip_restriction is None
    got = client.edges.https_routes.get(edge.id, route.id)
    assert got.id == route.id and got.description == "d"

    # A partial update: the client sends match_type "" and match "" (unchanged) and, for what was
    # not given, description "" and metadata "" (which set them to "", docs/decisions.md#patch).
    upd = client.edges.https_routes.update(
        edge.id, route.id, description="d2", backend=dt.EndpointBackendMutate(None, {"backend_id": "bkd_2"})
    )
    assert upd.match_type == "path_prefix" and upd.match == "/py", (upd.match_type, upd.match)
    assert upd.description == "d2" and upd.metadata == ""
    assert upd.backend.backend.id == "bkd_2"
    assert upd.circuit_breaker.num_buckets == 8  # absent module: unchanged
    moved = client.edges.https_routes.update(edge.id, route.id, match_type="exact_path", match="/py/x")
    assert moved.match_type == "exact_path" and moved.match == "/py/x"

    client.edges.https_routes.delete(edge.id, route.id)
    expect_not_found(lambda: client.edges.https_routes.get(edge.id, route.id))


@case
def route_error_is_the_clients_error():
    edge = client.edges.https.create()
    try:
        new_route(edge.id, "/bad", description="x" * 256)
    except Error as e:
        assert e.http_status_code == 400 and e.error_code == "ERR_EDGE_101", (e.http_status_code, e.error_code)
        assert e.details["field"] == "description", e.details
        return
    raise AssertionError("expected Error")


SESSION = {"cookie_prefix": "py.", "inactivity_timeout": 60, "maximum_duration": 3600}
# (client module, wire name, module as sent, checks on the module returned)
MODULES = [
    ("https_edge_route_backend", "backend", dt.EndpointBackendMutate(None, {"backend_id": "bkd_m"}),
     lambda m: m.backend.id == "bkd_m"),
    ("https_edge_route_ip_restriction", "ip_restriction",
     dt.EndpointIPPolicyMutate(None, {"ip_policy_ids": ["ipp_1", "ipp_2"]}),
     lambda m: [r.id for r in m.ip_policies] == ["ipp_1", "ipp_2"]),
    ("https_edge_route_request_headers", "request_headers",
     dt.EndpointRequestHeaders(None, {"add": {"X-Source": "edge"}, "remove": ["Cookie"]}),
     lambda m: m.add == {"X-Source": "edge"} and m.remove == ["Cookie"]),
    ("https_edge_route_response_headers", "response_headers",
     dt.EndpointResponseHeaders(None, {"add": {"Strict-Transport-Security": "max-age=1"}}),
     lambda m: m.add == {"Strict-Transport-Security": "max-age=1"} and m.remove == []),
    ("https_edge_route_compression", "compression", dt.EndpointCompression(None, {"enabled": False}),
     lambda m: m.enabled is False),
    # An empty module: the client sends no body at all (no bytes, no content type).
    ("https_edge_route_compression", "compression (empty: no body)", dt.EndpointCompression(None, {}),
     lambda m: m.enabled is True),
    ("https_edge_route_circuit_breaker", "circuit_breaker",
     dt.EndpointCircuitBreaker(None, {"tripped_duration": 5, "num_buckets": 4}),
     lambda m: m.tripped_duration.total_seconds() == 5 and m.num_buckets == 4 and m.volume_threshold == 0),
    ("https_edge_route_webhook_verification", "webhook_verification",
     dt.EndpointWebhookValidation(None, {"provider": "Stripe", "secret": "whsec"}),
     lambda m: m.provider == "stripe" and m.secret == "whsec"),
    ("https_edge_route_oauth", "oauth",
     props({**SESSION, "provider": {"google": {"email_domains": ["example.com"]}}, "auth_check_interval": 60}),
     lambda m: m.provider.google.email_domains == ["example.com"] and m.auth_check_interval == 60),
    ("https_edge_route_saml", "saml",
     dt.EndpointSAMLMutate(None, {**SESSION, "idp_metadata": IDP_METADATA, "authorized_groups": ["eng"]}),
     lambda m: m.authorized_groups == ["eng"] and m.entity_id.endswith("/metadata")
     and "BEGIN CERTIFICATE" in m.request_signing_certificate_pem),
    ("https_edge_route_oidc", "oidc",
     dt.EndpointOIDC(None, {**SESSION, "issuer": "https://id.example.com", "client_id": "c", "client_secret": "s"}),
     lambda m: m.issuer == "https://id.example.com" and m.cookie_prefix == "py."),
    ("https_edge_route_websocket_tcp_converter", "websocket_tcp_converter",
     dt.EndpointWebsocketTCPConverter(None, {}), lambda m: m.enabled is True),
    ("https_edge_route_user_agent_filter", "user_agent_filter",
     dt.EndpointUserAgentFilter(None, {"deny": ["bot"]}), lambda m: m.deny == ["bot"] and m.allow == []),
    ("https_edge_route_traffic_policy", "traffic_policy",
     dt.EndpointTrafficPolicy(None, {"value": "on_http_request: []"}), lambda m: m.value == "on_http_request: []"),
]


def module_case(accessor, wire, module, check):
    def run():
        edge = client.edges.https.create()
        route = new_route(edge.id, "/mod")
        m = getattr(mods, accessor)
        put = m.replace(edge.id, route.id, module)
        assert check(put), put
        got = m.get(edge.id, route.id)
        assert got == put, (got, put)
        field = wire.split(" ")[0]
        assert getattr(client.edges.https_routes.get(edge.id, route.id), field) is not None
        m.delete(edge.id, route.id)
        assert getattr(client.edges.https_routes.get(edge.id, route.id), field) is None
        expect_not_found(lambda: m.get(edge.id, route.id))

    run.__name__ = "module " + wire
    return run


for spec in MODULES:
    CASES.append(module_case(*spec))


@case
def route_with_modules_through_create():
    edge = client.edges.https.create()
    route = new_route(
        edge.id,
        "/all",
        ip_restriction=dt.EndpointIPPolicyMutate(None, {"ip_policy_ids": ["ipp_a"]}),
        webhook_verification=dt.EndpointWebhookValidation(None, {"provider": "sns"}),
        oidc=dt.EndpointOIDC(None, {"issuer": "https://id.example.com", "client_id": "c", "client_secret": "s"}),
        user_agent_filter=dt.EndpointUserAgentFilter(None, {"allow": ["curl"]}),
        traffic_policy=dt.EndpointTrafficPolicy(None, {"value": "p"}),
        websocket_tcp_converter=dt.EndpointWebsocketTCPConverter(None, {"enabled": False}),
    )
    assert route.ip_restriction.ip_policies[0].id == "ipp_a"
    assert route.webhook_verification.provider == "sns" and route.webhook_verification.secret == ""
    assert route.oidc.cookie_prefix == "edge."
    assert route.websocket_tcp_converter.enabled is False
    assert route.traffic_policy.value == "p"
    assert client.edges.https.get(edge.id).routes[0].id == route.id


@case
def tls_edge_create_get_list_delete():
    edge = client.edges.tls.create(description="tls", hostports=["tls.example.com:443"])
    assert edge.id.startswith("edgtls_") and edge.ip_restriction is None
    assert client.edges.tls.get(edge.id).hostports == ["tls.example.com:443"]
    client.edges.tls.create()
    ids = [e.id for e in client.edges.tls.list(limit="1")]
    assert edge.id in ids and len(ids) == len(set(ids)) and len(ids) >= 2
    client.edges.tls.delete(edge.id)
    expect_not_found(lambda: client.edges.tls.get(edge.id))


@case
def tls_ip_restriction_replace_get_delete():
    edge = client.edges.tls.create()
    m = mods.tls_edge_ip_restriction
    put = m.replace(edge.id, dt.EndpointIPPolicyMutate(None, {"enabled": False, "ip_policy_ids": ["ipp_t"]}))
    assert put.enabled is False and [r.id for r in put.ip_policies] == ["ipp_t"]
    assert put.ip_policies[0].uri == URL + "/ip_policies/ipp_t"
    assert m.get(edge.id) == put
    assert client.edges.tls.get(edge.id).ip_restriction.enabled is False
    m.delete(edge.id)
    expect_not_found(lambda: m.get(edge.id))


@case
def wrong_key_is_the_clients_error():
    try:
        ngrok.Client("wrong", base_url=URL).edges.https.list()
    except Error as e:
        assert e.http_status_code == 401 and e.error_code == "ERR_EDGE_401", (e.http_status_code, e.error_code)
        return
    raise AssertionError("expected Error")


@case
def client_bug_oauth_datatype_cannot_be_sent():
    """Client bug (fails against the real API too): the documented datatype does not serialize."""
    edge = client.edges.https.create()
    route = new_route(edge.id, "/oauth-bug")
    module = dt.EndpointOAuth(None, {"provider": {"google": {}}})
    try:
        mods.https_edge_route_oauth.replace(edge.id, route.id, module)
    except TypeError as e:
        assert "not JSON serializable" in str(e), e
        return
    raise AssertionError("the client serialized EndpointOAuth: the bug is fixed, send the datatype itself")


if __name__ == "__main__":
    for fn in CASES:
        try:
            fn()
            result = {"case": fn.__name__, "ok": True, "error": ""}
        except Exception:  # noqa: BLE001 - every failure is reported, none stops the others
            result = {"case": fn.__name__, "ok": False, "error": traceback.format_exc()}
        print(json.dumps(result), flush=True)
    sys.exit(0)
