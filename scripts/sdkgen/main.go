// sdkgen writes the SDK of one language for a Pulumi package schema, with Pulumi's own code
// generators (github.com/pulumi/pulumi/pkg/v3/codegen): the library that the language hosts run
// behind `pulumi package gen-sdk`. The Node.js and Python hosts this project can build offline
// (from sdk/v3@v3.68.0, see scripts/provision-pulumi.sh) predate the GeneratePackage call, so
// `gen-sdk` cannot reach the generators through them; this calls the generators of the pinned
// release directly. Usage: sdkgen -schema schema.json -language nodejs|python|go -out DIR
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
)

const tool = "pulumi-edge sdkgen (pulumi pkg/v3 codegen)"

// noReferences loads no other package: the edge schema refers to none.
type noReferences struct{}

var errNoReferences = errors.New("the edge schema refers to no other package")

func (noReferences) LoadPackage(string, *semver.Version) (*schema.Package, error) {
	return nil, errNoReferences
}

func (noReferences) LoadPackageV2(context.Context, *schema.PackageDescriptor) (*schema.Package, error) {
	return nil, errNoReferences
}

func (noReferences) LoadPackageReference(string, *semver.Version) (schema.PackageReference, error) {
	return nil, errNoReferences
}

func (noReferences) LoadPackageReferenceV2(context.Context, *schema.PackageDescriptor) (schema.PackageReference, error) {
	return nil, errNoReferences
}

func main() {
	schemaPath := flag.String("schema", "", "the package schema (JSON)")
	language := flag.String("language", "", "nodejs, python or go")
	out := flag.String("out", "", "directory to write the SDK into (replaced)")
	flag.Parse()
	if err := run(*schemaPath, *language, *out); err != nil {
		fmt.Fprintf(os.Stderr, "sdkgen: %v\n", err)
		os.Exit(1)
	}
}

func run(schemaPath, language, out string) error {
	if schemaPath == "" || language == "" || out == "" {
		return errors.New("usage: sdkgen -schema schema.json -language nodejs|python|go -out DIR")
	}
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	loader := noReferences{}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{})
	if err != nil {
		return err
	}
	if diags.HasErrors() {
		return fmt.Errorf("the schema is not valid: %v", diags)
	}
	var files map[string][]byte
	switch language {
	case "nodejs":
		files, err = nodejs.GeneratePackage(tool, pkg, nil, nil, false, loader)
	case "python":
		files, err = python.GeneratePackage(tool, pkg, nil, loader)
	case "go":
		files, err = gogen.GeneratePackage(tool, pkg, nil)
	default:
		return fmt.Errorf("no generator for %q here (nodejs, python, go)", language)
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for name, content := range files {
		path := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
