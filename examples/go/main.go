// The packaged edge provider from Go: an HTTPS edge and a route with modules, on the generated
// Go SDK. Run with the Go language host (pulumi-language-go, in the official CLI archive):
// first-stack.sh deploys it (guide, "A first stack").
// [snippet: go-program]
package main

import (
	"github.com/pulumi-edge/pulumi-edge/sdk/go/edge"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		web, err := edge.NewHttpsEdge(ctx, "web", &edge.HttpsEdgeArgs{
			Hostports: pulumi.StringArray{pulumi.String("shop.example.com:443")},
		})
		if err != nil {
			return err
		}
		api, err := edge.NewHttpsEdgeRoute(ctx, "api", &edge.HttpsEdgeRouteArgs{
			EdgeId:    web.ID().ToStringOutput(),
			MatchType: edge.MatchTypePathPrefix,
			Match:     pulumi.String("/api"),
			Backend:   &edge.RouteBackendArgs{BackendId: pulumi.String("bkd_shop_api")},
			CircuitBreaker: &edge.RouteCircuitBreakerArgs{
				NumBuckets:               pulumi.Int(10),
				ErrorThresholdPercentage: pulumi.Float64(0.5),
			},
		})
		if err != nil {
			return err
		}
		ctx.Export("routeId", api.ID())
		ctx.Export("circuitBreaker", api.CircuitBreaker)
		return nil
	})
}

// [/snippet]
