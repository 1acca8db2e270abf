"""bench/program (index.ts) in Python, packaged mode: the same edge and `routes` routes with the
same modules, on the generated Python SDK (pulumi_edge), so that a stack deployed by one runs
with no changes under the other. Used by bench/program-runtimes.mjs."""
import pulumi
import pulumi_edge as edge

config = pulumi.Config()
count = config.require_int("routes")

web = edge.HttpsEdge("web", description="benchmark edge", hostports=["bench.example.com:443"])

for i in range(count):
    edge.HttpsEdgeRoute(
        f"route-{i}",
        edge_id=web.id,
        match_type="path_prefix",
        match=f"/svc-{i}",
        description=f"service {i}",
        backend={"backend_id": f"bkd_{i % 7}"},
        ip_restriction={"ip_policy_ids": ["ipp_office", "ipp_vpn"]},
        circuit_breaker={"num_buckets": 10, "error_threshold_percentage": 0.5, "volume_threshold": 20},
        compression={},
        request_headers={"add": {"X-Edge-Service": f"svc-{i}"}, "remove": ["X-Internal"]},
        user_agent_filter={"deny": ["badbot/.*"]},
    )

pulumi.export("edgeId", web.id)
