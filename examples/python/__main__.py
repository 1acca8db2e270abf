"""The packaged edge provider from Python: an HTTPS edge with a route and its modules, and a TLS
edge with an IP restriction, on the generated Python SDK. Before the first `pulumi up`:

    pulumi config set --secret oidcClientSecret <the secret of your OIDC client>
"""
# [snippet: python-program]
import pulumi
import pulumi_edge as edge

config = pulumi.Config()

web = edge.HttpsEdge("web", description="Public web edge", hostports=["shop.example.com:443"])

api = edge.HttpsEdgeRoute(
    "api",
    edge_id=web.id,
    match_type=edge.MatchType.PATH_PREFIX,
    match="/api",
    # Arguments are snake_case; modules take dicts (keys snake_case too) or the *Args classes.
    backend={"backend_id": config.get("backendId") or "bkd_shop_api"},
    circuit_breaker=edge.RouteCircuitBreakerArgs(num_buckets=10, error_threshold_percentage=0.5),
    request_headers={"add": {"X-Request-Source": "edge"}, "remove": ["Cookie"]},
    oidc={
        "issuer": "https://login.example.com",
        "client_id": "shop",
        "client_secret": config.require_secret("oidcClientSecret"),
    },
)

db = edge.TlsEdge("postgres", hostports=["db.example.com:5432"])
allowlist = edge.TlsEdgeIpRestriction("postgres-allowlist", edge_id=db.id, ip_policy_ids=["ipp_office"])
# [/snippet]

# A route's id says where it is, `<edgeId>/<routeId>` (the form `pulumi import` takes).
pulumi.export("routeId", api.id)
pulumi.export("serviceRouteId", api.route_id)
pulumi.export("circuitBreaker", api.circuit_breaker)
pulumi.export("allowed", allowlist.ip_policy_ids)
