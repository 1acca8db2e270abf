#!/usr/bin/env bash
# Makes the pinned Pulumi engine available where the official `pulumi` npm wrapper and the
# Automation API look for it: $PULUMI_HOME/versions/<version>/bin (PULUMI_HOME defaults to
# ~/.pulumi). Idempotent: a complete install is detected and left alone.
#
# Order of preference: an existing install; the official release archive when the machine is
# online; otherwise a build from the Go module proxy with the installed Go toolchain.
#
# The version is pinned once, in package.json (dependencies["@pulumi/pulumi"]); the `pulumi`
# wrapper devDependency must carry the same version (checked below).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

say() { printf '[provision-pulumi] %s\n' "$*"; }
die() { printf '[provision-pulumi] error: %s\n' "$*" >&2; exit 1; }

command -v node >/dev/null || die "node is not on PATH; install Node.js 20 first."
version=$(node -p 'require("./package.json").dependencies["@pulumi/pulumi"]')
wrapper=$(node -p 'require("./package.json").devDependencies.pulumi')
[ "$version" = "$wrapper" ] \
  || die "package.json pins @pulumi/pulumi $version but the pulumi wrapper $wrapper: make them equal."
[ -d node_modules/@pulumi/pulumi ] || die "node_modules is missing: run 'npm ci' first."

pulumi_home=${PULUMI_HOME:-$HOME/.pulumi}
bin="$pulumi_home/versions/$version/bin"
build_root=${PULUMI_EDGE_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pulumi-edge/engine-build}

# The Node.js language host of the release commit lives in its own untagged module, which the
# module proxy reachable here refuses at every revision. v3.68.0 is the last release whose
# sdk module still contained the language host; it is built from there. It speaks the same
# language-runtime gRPC protocol and launches the installed @pulumi/pulumi's own runner.
language_host_sdk=v3.68.0

installed_ok() {
  [ -x "$bin/pulumi" ] && [ -x "$bin/pulumi-language-nodejs" ] && [ -x "$bin/pulumi-resource-pulumi-nodejs" ] \
    && python_host_ok && [ "$("$bin/pulumi" version 2>/dev/null)" = "v$version" ]
}

# The Python language host (for Python programs on the packaged provider's generated SDK) needs
# its executor script beside it.
python_host_ok() { [ -x "$bin/pulumi-language-python" ] && [ -x "$bin/pulumi-language-python-exec" ]; }

install_dynamic_provider_host() {
  # Shipped inside @pulumi/pulumi: a sh script that runs the package's dynamic-provider host.
  cp node_modules/@pulumi/pulumi/pulumi-resource-pulumi-nodejs "$bin/"
  chmod +x "$bin/pulumi-resource-pulumi-nodejs"
}

online() {
  command -v curl >/dev/null && curl -fsSI --max-time 5 "https://get.pulumi.com/releases/sdk/pulumi-v$version-linux-x64.tar.gz" >/dev/null 2>&1
}

download_release() {
  say "downloading the official v$version release archive"
  local tmp; tmp=$(mktemp -d)
  curl -fsSL "https://get.pulumi.com/releases/sdk/pulumi-v$version-linux-x64.tar.gz" -o "$tmp/pulumi.tgz"
  tar -xzf "$tmp/pulumi.tgz" -C "$tmp"
  mkdir -p "$bin"
  cp "$tmp"/pulumi/pulumi "$tmp"/pulumi/pulumi-language-nodejs \
    "$tmp"/pulumi/pulumi-language-python "$tmp"/pulumi/pulumi-language-python-exec "$bin/"
  # The release's Go and YAML hosts too, where it carries them: the tests of Go and YAML
  # programs (the first day, import) run where these are installed.
  for host in pulumi-language-go pulumi-language-yaml; do
    if [ -x "$tmp/pulumi/$host" ]; then cp "$tmp/pulumi/$host" "$bin/"; fi
  done
  rm -rf "$tmp"
}

module_dir() { # module@version -> extracted directory in the module cache
  go mod download -json "$1" | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      const j = JSON.parse(s);
      if (j.Error || !j.Dir) { console.error(j.Error || "no directory"); process.exit(1); }
      console.log(j.Dir);
    });'
}

stage() { # copy a read-only module from the cache into a writable build tree
  rm -rf "$2"; mkdir -p "$(dirname "$2")"; cp -r "$1" "$2"; chmod -R u+w "$2"
}

build_from_source() {
  command -v go >/dev/null || die "Pulumi v$version is not installed, the machine is offline, and Go is not installed: install Go >= 1.25 (or go online) and run this script again."
  local flags=(-trimpath -tags osusergo,grpcnotrace)
  local ldflags="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$version"
  local tree="$build_root/v$version"
  # go.mod files of the pulumi repository `replace` sibling modules by relative path
  # (pkg -> ../sdk), so the downloaded modules are laid out as in the repository.
  say "fetching github.com/pulumi/pulumi/{pkg,sdk}/v3@v$version from the Go module proxy"
  local pkg sdk
  pkg=$(module_dir "github.com/pulumi/pulumi/pkg/v3@v$version") || die "the module proxy has no pkg/v3@v$version"
  sdk=$(module_dir "github.com/pulumi/pulumi/sdk/v3@v$version") || die "the module proxy has no sdk/v3@v$version"
  stage "$pkg" "$tree/pkg"
  stage "$sdk" "$tree/sdk"
  mkdir -p "$bin"
  say "building the pulumi CLI (cold: ~15 min on 2 cores; the Go build cache makes rebuilds fast)"
  (cd "$tree/pkg" && go build "${flags[@]}" -ldflags "$ldflags" -o "$bin/pulumi" ./cmd/pulumi)

  say "building pulumi-language-nodejs from sdk/v3@$language_host_sdk"
  build_language_host nodejs
  build_python_host
}

language_host_tree() { # the sdk module of $language_host_sdk, staged once
  local tree="$build_root/v$version/language-host/sdk"
  if [ ! -d "$tree/nodejs/cmd" ]; then
    local lh
    lh=$(module_dir "github.com/pulumi/pulumi/sdk/v3@$language_host_sdk") || die "the module proxy has no sdk/v3@$language_host_sdk"
    stage "$lh" "$tree"
  fi
  echo "$tree"
}

build_language_host() { # nodejs | python
  local tree; tree=$(language_host_tree)
  (cd "$tree" && go build -trimpath -tags osusergo,grpcnotrace \
    -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$version" \
    -o "$bin/pulumi-language-$1" "./$1/cmd/pulumi-language-$1")
}

build_python_host() {
  command -v go >/dev/null || die "the Python language host is missing from $bin and Go is not installed to build it: install Go >= 1.25 and run this script again."
  say "building pulumi-language-python from sdk/v3@$language_host_sdk"
  build_language_host python
  install -m 0755 "$(language_host_tree)/python/cmd/pulumi-language-python-exec" "$bin/"
}

# One provisioning at a time per PULUMI_HOME and build tree (two terminals, two CI jobs on one
# runner): the second waits, then finds the install complete. The builds stage module sources in
# the shared build tree and write the binaries to a directory of their own first, moved into $bin
# each by a rename, so a `pulumi` running meanwhile is never half written.
mkdir -p "$pulumi_home/versions" "$build_root"
exec 9>"$pulumi_home/versions/.provision-$version.lock"
if ! flock -n 9; then
  say "another provisioning of v$version runs; waiting for it"
  flock 9
fi
final_bin=$bin
staging=$(mktemp -d "$pulumi_home/versions/.bin-$version-XXXXXX")
trap 'rm -rf "$staging"' EXIT
bin=$staging
cp -p "$final_bin"/* "$staging"/ 2>/dev/null || true
publish() { # the binaries built into the staging directory, each renamed into $final_bin
  mkdir -p "$final_bin"
  for f in "$staging"/*; do [ -e "$f" ] && mv -f "$f" "$final_bin/"; done
  bin=$final_bin
}

if bin=$final_bin installed_ok; then
  bin=$final_bin
  say "Pulumi v$version already installed in $bin"
else
  if [ -x "$bin/pulumi" ] && [ "$("$bin/pulumi" version 2>/dev/null)" = "v$version" ] && [ -x "$bin/pulumi-language-nodejs" ]; then
    python_host_ok || build_python_host
  elif online; then
    download_release
  else
    say "offline: building Pulumi v$version from the Go module proxy with $(go version 2>/dev/null || echo 'no Go')"
    build_from_source
  fi
  install_dynamic_provider_host
  publish
  installed_ok || die "the install in $bin is incomplete; see the messages above."
  say "installed Pulumi v$version in $bin"
fi

"$bin/pulumi" version
