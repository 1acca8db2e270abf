module example.com/edge-go

go 1.21

require (
	github.com/pulumi-edge/pulumi-edge/sdk v0.1.0
	github.com/pulumi/pulumi/sdk/v3 v3.259.0
)

// The generated Go SDK ships in the npm package (node_modules/pulumi-edge/dist/sdks).
replace github.com/pulumi-edge/pulumi-edge/sdk => ./node_modules/pulumi-edge/dist/sdks
