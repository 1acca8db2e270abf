// The route used throughout the benchmarks (wire format): the same six modules as the routes of
// bench/program, so that every section talks about one realistic route.
export function routeBody(i, prefix = "svc") {
  return {
    match_type: "path_prefix",
    match: `/${prefix}-${i}`,
    description: `service ${i}`,
    backend: { backend_id: `bkd_${i % 7}` },
    ip_restriction: { ip_policy_ids: ["ipp_office", "ipp_vpn"] },
    circuit_breaker: { num_buckets: 10, error_threshold_percentage: 0.5, volume_threshold: 20 },
    compression: {},
    request_headers: { add: { "X-Edge-Service": `svc-${i}` }, remove: ["X-Internal"] },
    user_agent_filter: { deny: ["badbot/.*"] },
  };
}
