package main

// One release rendered as `helm template` renders it. The steps, their order
// and every error text follow helm v4.3.2's pkg/cmd/template.go (newTemplateCmd)
// and pkg/cmd/install.go (runInstall); the rendering itself is the SDK's
// action.Install in client-only dry-run mode, as the binary uses it.

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// debugHint is what `helm template` appends to an error that came with a
// partly rendered release (without --debug).
const debugHint = "\n\nUse --debug flag to render out invalid YAML"

// render renders one request. The error's text is what the binary prints
// after "Error: ".
func render(req *request, charts *chartCache) ([]byte, error) {
	apis, err := apiVersionsFlag(req.APIVersions)
	if err != nil {
		return nil, err
	}
	client := action.NewInstall(action.NewConfiguration())
	if req.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(req.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("invalid kube version '%s': %w", req.KubeVersion, err)
		}
		client.KubeVersion = kv
	}
	client.DryRunStrategy = action.DryRunClient
	client.ReleaseName = "release-name"
	client.Replace = true
	client.APIVersions = common.VersionSet(apis)
	client.IncludeCRDs = req.IncludeCRDs

	rel, err := install(req, client, charts)
	if err != nil {
		if rel != nil {
			return nil, fmt.Errorf("%w%s", err, debugHint)
		}
		return nil, err
	}
	if rel == nil {
		return nil, nil
	}
	return assemble(rel, req.SkipTests, client.DisableHooks), nil
}

// apiVersionsFlag reads api_versions as the repeated `--api-versions` flag
// reads them: each one is a comma-separated list (read as one CSV record).
func apiVersionsFlag(given []string) ([]string, error) {
	out := []string{}
	for _, v := range given {
		if v == "" {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(v)).Read()
		if err != nil {
			return nil, fmt.Errorf("invalid argument %q for %q flag: %w", v, "-a, --api-versions", err)
		}
		out = append(out, rec...)
	}
	return out, nil
}

// install mirrors runInstall for a chart on local disk, with the values of
// `-f -` taken from the request instead of standard input.
func install(req *request, client *action.Install, charts *chartCache) (*release.Release, error) {
	client.ReleaseName = req.Release
	cp, err := locateChart(req.Chart)
	if err != nil {
		return nil, err
	}
	vals, err := valuesFromStdin(req.Values)
	if err != nil {
		return nil, err
	}
	chartRequested, err := charts.load(cp)
	if err != nil {
		return nil, err
	}
	if err := checkChart(chartRequested); err != nil {
		return nil, err
	}
	client.Namespace = namespace(req.Namespace)
	r, err := client.RunWithContext(context.Background(), chartRequested, vals)
	rel, rerr := asV1Release(r)
	if rerr != nil {
		return nil, rerr
	}
	return rel, err
}

// locateChart is ChartPathOptions.LocateChart for a local path: an existing
// path made absolute, else helm's "not found" (requests carry absolute paths,
// so helm would not go on to look in a repository).
func locateChart(name string) (string, error) {
	name = strings.TrimSpace(name)
	if _, err := os.Stat(name); err != nil {
		return name, fmt.Errorf("path %q not found", name)
	}
	return filepath.Abs(name)
}

// valuesFromStdin reads values as `-f -` does: helm's own reader of values
// files (several YAML documents merge; a null stays a null, which later
// deletes the chart's default of that key), merged onto an empty map.
func valuesFromStdin(raw []byte) (map[string]any, error) {
	current, err := loader.LoadValues(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", "-", err)
	}
	return loader.MergeMaps(map[string]any{}, current), nil
}

// checkChart is runInstall's checks between loading a chart and rendering it.
func checkChart(ch chart.Charter) error {
	ac, err := chart.NewAccessor(ch)
	if err != nil {
		return err
	}
	switch t := ac.MetadataAsMap()["Type"]; t {
	case "", "application":
	default:
		return fmt.Errorf("%s charts are not installable", t)
	}
	if ac.Deprecated() {
		slog.Warn("this chart is deprecated")
	}
	if deps := ac.MetaDependencies(); len(deps) > 0 {
		if err := action.CheckDependencies(ch, deps); err != nil {
			return fmt.Errorf("an error occurred while checking for chart dependencies. You may need to run 'helm dependency build' to fetch missing dependencies: %w", err)
		}
	}
	return nil
}

// namespace is what helm's --namespace gives: an empty flag falls back to the
// kubeconfig's namespace, which is "default" when there is none.
func namespace(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// asV1Release is the release an install returns, as the v1 type.
func asV1Release(r ri.Releaser) (*release.Release, error) {
	switch r := r.(type) {
	case nil:
		return nil, nil
	case *release.Release:
		return r, nil
	case release.Release:
		return &r, nil
	default:
		return nil, fmt.Errorf("unsupported release type: %T", r)
	}
}

// assemble prints a rendered release as `helm template` prints it to standard
// output: the manifest (which already holds the CRDs first when asked for),
// trimmed and ended by one newline, then each hook as its own document with a
// "# Source:" line, test hooks left out when skipTests.
func assemble(rel *release.Release, skipTests, disableHooks bool) []byte {
	var b bytes.Buffer
	b.WriteString(strings.TrimSpace(rel.Manifest))
	b.WriteByte('\n')
	if disableHooks {
		return b.Bytes()
	}
	for _, h := range rel.Hooks {
		if skipTests && slices.Contains(h.Events, release.HookTest) {
			continue
		}
		b.WriteString("---\n# Source: ")
		b.WriteString(h.Path)
		b.WriteByte('\n')
		b.WriteString(h.Manifest)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
