// sdkgen writes the SDK of one language for a Pulumi package schema, with Pulumi's own code
// generators (github.com/pulumi/pulumi/pkg/v3/codegen): the library that the language hosts run
// behind `pulumi package gen-sdk`. The Node.js and Python hosts this project can build offline
// (from sdk/v3@v3.68.0, see scripts/provision-pulumi.sh) predate the GeneratePackage call, so
// `gen-sdk` cannot reach the generators through them; this calls the generators of the pinned
// release directly. Usage: sdkgen -schema schema.json -language nodejs|python|go -out DIR
//
// They predate GenerateProgram too, the call through which `pulumi import` writes the code of what
// it imported; `-import-code` writes that code the way the 3.259 CLI and its hosts do (the
// importer's PCL for the resource's state, bound and generated in the language), for the tests
// that run a guide's `pulumi import` on these hosts:
//
//	sdkgen -import-code -schema schema.json -language nodejs|python|go -state EXPORT.json
//	       -type TYPE -name NAME [-protect=false] -out FILE
//
// where EXPORT.json is `pulumi stack export --show-secrets` after `pulumi import TYPE NAME ID
// --generate-code=false`.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/blang/semver"
	"github.com/hashicorp/hcl/v2"
	"github.com/pulumi/pulumi/pkg/v3/codegen/hcl2/syntax"
	"github.com/pulumi/pulumi/pkg/v3/codegen/pcl"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/pkg/v3/importer"
	pkgresource "github.com/pulumi/pulumi/pkg/v3/resource"
	"github.com/pulumi/pulumi/pkg/v3/resource/stack"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"

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
	out := flag.String("out", "", "directory to write the SDK into (replaced); with -import-code, the file to write")
	importCode := flag.Bool("import-code", false, "write the code `pulumi import` prints for one imported resource")
	statePath := flag.String("state", "", "with -import-code: `pulumi stack export --show-secrets` after the import")
	typ := flag.String("type", "", "with -import-code: the imported resource's type")
	name := flag.String("name", "", "with -import-code: the imported resource's name")
	protect := flag.Bool("protect", true, "with -import-code: as `pulumi import --protect`")
	flag.Parse()
	var err error
	if *importCode {
		err = writeImportCode(*schemaPath, *language, *statePath, *typ, *name, *protect, *out)
	} else {
		err = run(*schemaPath, *language, *out)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sdkgen: %v\n", err)
		os.Exit(1)
	}
}

// bind reads and binds the package schema.
func bind(schemaPath string) (*schema.Package, error) {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return nil, err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", schemaPath, err)
	}
	pkg, diags, err := schema.BindSpec(spec, noReferences{}, schema.ValidationOptions{})
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("the schema is not valid: %v", diags)
	}
	return pkg, nil
}

// onePackage loads the bound package by its name, at any version (the schema's is the plugin's).
type onePackage struct{ pkg *schema.Package }

func (l onePackage) find(name string) (*schema.Package, error) {
	if name != l.pkg.Name {
		return nil, fmt.Errorf("no schema for package %q here (only %q)", name, l.pkg.Name)
	}
	return l.pkg, nil
}

func (l onePackage) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return l.find(name)
}

func (l onePackage) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return l.find(d.Name)
}

func (l onePackage) LoadPackageReference(name string, _ *semver.Version) (schema.PackageReference, error) {
	pkg, err := l.find(name)
	if err != nil {
		return nil, err
	}
	return pkg.Reference(), nil
}

func (l onePackage) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	return l.LoadPackageReference(d.Name, d.Version)
}

// writeImportCode does what `pulumi import` does after the import: the importer's PCL for the
// resource's state (its protect bit set as the flag says), sent as source to the language's
// generator, which binds it as the 3.259 hosts bind it (output-versioned invokes, not strict; Go
// strict) and generates the one file whose contents the CLI writes to --out.
func writeImportCode(schemaPath, language, statePath, typ, name string, protect bool, out string) error {
	if schemaPath == "" || language == "" || statePath == "" || typ == "" || name == "" || out == "" {
		return errors.New("usage: sdkgen -import-code -schema schema.json -language nodejs|python|go " +
			"-state EXPORT.json -type TYPE -name NAME [-protect=false] -out FILE")
	}
	pkg, err := bind(schemaPath)
	if err != nil {
		return err
	}
	loader := onePackage{pkg}
	raw, err := os.ReadFile(statePath)
	if err != nil {
		return err
	}
	var exported apitype.UntypedDeployment
	if err := json.Unmarshal(raw, &exported); err != nil {
		return fmt.Errorf("%s: %w", statePath, err)
	}
	var deployment apitype.DeploymentV3
	if err := json.Unmarshal(exported.Deployment, &deployment); err != nil {
		return fmt.Errorf("%s: %w", statePath, err)
	}
	var snapshot, imported []*pkgresource.State
	names := importer.NameTable{}
	for _, r := range deployment.Resources {
		state, err := stack.DeserializeResource(r, config.NopDecrypter)
		if err != nil {
			return err
		}
		snapshot = append(snapshot, state)
		if string(state.Type) == typ && state.URN.Name() == name && !state.Delete {
			copied := state.Copy()
			copied.Protect = protect
			imported = append(imported, copied)
			names[state.URN] = name
		}
	}
	if len(imported) != 1 {
		return fmt.Errorf("%s holds %d resources of type %s named %s: import it first", statePath, len(imported), typ, name)
	}
	var code bytes.Buffer
	generate := func(w io.Writer, p *pcl.Program) error {
		files, err := generateProgram(language, p.Source(), loader)
		if err != nil {
			return err
		}
		var contents []byte
		for _, v := range files {
			contents = v
		}
		_, err = w.Write(contents)
		return err
	}
	if err := importer.GenerateLanguageDefinitions(&code, loader, generate, imported, snapshot, names); err != nil {
		return err
	}
	return os.WriteFile(out, code.Bytes(), 0o644)
}

// generateProgram is a 3.259 language host's GenerateProgram for the import's PCL source.
func generateProgram(language string, source map[string]string, loader schema.ReferenceLoader) (map[string][]byte, error) {
	parser := syntax.NewParser()
	for path, contents := range source {
		if err := parser.ParseFile(bytes.NewReader([]byte(contents)), path); err != nil {
			return nil, err
		}
		if parser.Diagnostics.HasErrors() {
			return nil, parser.Diagnostics
		}
	}
	options := []pcl.BindOption{pcl.PreferOutputVersionedInvokes}
	if language != "go" {
		options = append(options, pcl.NonStrictBindOptions()...)
	}
	program, diags, err := pcl.BindProgram(parser.Files, schema.NewCachedLoader(loader), options...)
	if err != nil {
		return nil, err
	}
	if diags.HasErrors() {
		return nil, diags
	}
	var files map[string][]byte
	var genDiags hcl.Diagnostics
	switch language {
	case "nodejs":
		files, genDiags, err = nodejs.GenerateProgramWithOptions(program, nodejs.ProgramOptions{Runtime: "nodejs"})
	case "python":
		files, genDiags, err = python.GenerateProgram(program)
	case "go":
		files, genDiags, err = gogen.GenerateProgram(program)
	default:
		return nil, fmt.Errorf("no program generator for %q here (nodejs, python, go)", language)
	}
	if err != nil {
		return nil, err
	}
	if genDiags.HasErrors() {
		return nil, genDiags
	}
	return files, nil
}

func run(schemaPath, language, out string) error {
	if schemaPath == "" || language == "" || out == "" {
		return errors.New("usage: sdkgen -schema schema.json -language nodejs|python|go -out DIR")
	}
	pkg, err := bind(schemaPath)
	if err != nil {
		return err
	}
	loader := noReferences{}
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
