package main

// The renderer must print what `helm template` prints, byte for byte, and fail
// with helm's message where helm fails. This test renders every chart of
// strata's own tests (tests/charts) and of this folder (testdata/charts), as
// directories and as archives packed by `helm package`, with several value
// sets, namespaces, Kubernetes versions and API version lists, both with the
// helm binary run as strata runs it and through one renderer process, and
// compares the two.

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// renderCase is one release rendered both ways.
type renderCase struct {
	name        string
	chart       string
	release     string
	namespace   string
	kube        string
	apis        []string
	values      []byte
	includeCRDs bool
	skipTests   bool
	// mask hides what differs between any two renders (random text).
	mask *regexp.Regexp
}

// target is the cluster a case renders for.
type target struct {
	name      string
	release   string
	namespace string
	kube      string
	apis      []string
}

var targets = []target{
	{"k135", "demo", "default", "v1.35.0", nil},
	{"k130-apis", "team-a-app", "team-a", "v1.30.4", []string{
		"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor",
		"example.com/v1,example.com/v1/Gadget",
	}},
	{"k127", "sys", "kube-system", "v1.27.0", nil},
	// No namespace and no Kubernetes version: helm's own defaults.
	{"defaults", "x", "", "", nil},
}

// strataValueSets are given to every chart of strata's tests; keys a chart
// does not read change nothing, and a chart that needs a key fails on the
// sets without it (which is compared too).
var strataValueSets = []struct{ name, yaml string }{
	{"empty", ""},
	{"overrides", "replicas: 3\nreplicaCount: 2\npdb:\n  enabled: true\npodDisruptionBudget:\n  enabled: true\nnodeSelector:\n  disk: ssd\ndatabase:\n  host: db.example\nsize: 7\n"},
	{"nulls", "nodeSelector: null\nresources: null\nimage:\n  tag: null\ntolerations: ~\n"},
	{"layers", "replicas: 1\nspec:\n  colour: red\n---\nreplicas: 4\nspec:\n  colour: blue\nextra: ~\n"},
}

// noisyPassword is the random password of tests/charts/noisy.
var noisyPassword = regexp.MustCompile(`password: "[A-Za-z0-9]{24}"`)

func TestIdenticalToHelmTemplate(t *testing.T) {
	helm := newHelmRunner(t)
	cases := identityCases(t, helm)
	want := renderAllWithHelm(t, helm, cases)
	got := renderAllWithRenderer(t, cases)
	var same, sameErrors int
	for i, c := range cases {
		for pass := 1; pass <= 2; pass++ {
			r := got[fmt.Sprintf("%d/%d", i, pass)]
			if r == nil {
				t.Errorf("%s: no response", c.name)
				continue
			}
			if msg := compare(c, want[i], r); msg != "" {
				t.Errorf("%s (pass %d): %s", c.name, pass, msg)
			} else if want[i].ok {
				same++
			} else {
				sameErrors++
			}
		}
	}
	t.Logf("%d cases, each rendered twice by one renderer: %d identical manifests, %d identical errors",
		len(cases), same, sameErrors)
	if sameErrors == 0 || same == 0 {
		t.Errorf("the cases should both render and fail")
	}
}

// identityCases builds every case: each chart (as a directory and, when helm
// packs it, as an archive) with each value set for each target, plus a few
// cases of bad input.
func identityCases(t *testing.T, helm *helmRunner) []*renderCase {
	var cases []*renderCase
	for _, src := range chartSources(t, helm) {
		for _, vs := range src.valueSets {
			for _, tg := range targets {
				cases = append(cases, &renderCase{
					name:    fmt.Sprintf("%s %s values=%s target=%s", src.name, src.form, vs.name, tg.name),
					chart:   src.path,
					release: tg.release, namespace: tg.namespace, kube: tg.kube, apis: tg.apis,
					values: []byte(vs.yaml), includeCRDs: true, skipTests: true, mask: src.mask,
				})
			}
		}
	}
	return append(cases, oddCases(t)...)
}

// oddCases are cases of flags strata does not pass and of bad input.
func oddCases(t *testing.T) []*renderCase {
	app := absPath(t, "testdata/charts/app")
	base := renderCase{chart: app, release: "demo", namespace: "apps", kube: "v1.35.0", includeCRDs: true, skipTests: true}
	with := func(name string, change func(*renderCase)) *renderCase {
		c := base
		c.name = name
		change(&c)
		return &c
	}
	return []*renderCase{
		with("app without --include-crds", func(c *renderCase) { c.includeCRDs = false }),
		with("app without --skip-tests", func(c *renderCase) { c.skipTests = false }),
		with("app with neither flag", func(c *renderCase) { c.includeCRDs, c.skipTests = false, false }),
		with("missing chart", func(c *renderCase) { c.chart = filepath.Join(t.TempDir(), "nothing-here") }),
		with("values file instead of a chart", func(c *renderCase) {
			c.chart = absPath(t, "testdata/values/app/overrides.yaml")
		}),
		with("bad release name", func(c *renderCase) { c.release = "Not_A_Name" }),
		with("bad kube version", func(c *renderCase) { c.kube = "one.two" }),
		with("api version list with a bare quote", func(c *renderCase) { c.apis = []string{`a"b/v1`} }),
		with("api versions with spaces and empties", func(c *renderCase) {
			c.apis = []string{"example.com/v1, monitoring.coreos.com/v1/ServiceMonitor", ""}
		}),
		with("values that are a list", func(c *renderCase) { c.values = []byte("- a\n- b\n") }),
		with("values that are not YAML", func(c *renderCase) { c.values = []byte("a: [b\n") }),
	}
}

// chartSource is one chart in one form (directory or archive).
type chartSource struct {
	name, form, path string
	valueSets        []struct{ name, yaml string }
	mask             *regexp.Regexp
}

// chartSources lists strata's test charts and ours, each as a directory and
// as the archive helm packs of it, and our app chart once more with its
// subchart packed inside it.
func chartSources(t *testing.T, helm *helmRunner) []chartSource {
	var dirs []chartSource
	for _, pattern := range []string{"../tests/charts/*/Chart.yaml", "../tests/charts/standins/*/Chart.yaml"} {
		found, _ := filepath.Glob(pattern)
		for _, f := range found {
			d := absPath(t, filepath.Dir(f))
			src := chartSource{name: "strata:" + relName(d), path: d, valueSets: strataValueSets}
			if filepath.Base(d) == "noisy" {
				src.mask = noisyPassword
			}
			dirs = append(dirs, src)
		}
	}
	if len(dirs) < 8 {
		t.Fatalf("found %d of strata's test charts under ../tests/charts", len(dirs))
	}
	ours, _ := filepath.Glob("testdata/charts/*/Chart.yaml")
	for _, f := range ours {
		d := absPath(t, filepath.Dir(f))
		dirs = append(dirs, chartSource{name: filepath.Base(d), path: d, valueSets: ourValueSets(t, filepath.Base(d))})
	}
	i := slices.IndexFunc(dirs, func(d chartSource) bool { return d.name == "app" })
	if i < 0 {
		t.Fatal("no testdata/charts/app")
	}
	packedSub := dirs[i]
	packedSub.name, packedSub.path = "app(subchart packed)", withPackedSubchart(t, helm, packedSub.path)
	dirs = append(dirs, packedSub)
	return withArchives(t, helm, dirs)
}

// withArchives returns each directory source followed by its archive.
func withArchives(t *testing.T, helm *helmRunner, dirs []chartSource) []chartSource {
	var all []chartSource
	packed := t.TempDir()
	for i, d := range dirs {
		d.form = "dir"
		all = append(all, d)
		dest := filepath.Join(packed, fmt.Sprint(i))
		tgz, ok := helm.packageChart(t, d.path, dest)
		if !ok {
			if d.name != "undeclared" {
				t.Fatalf("helm could not pack %s", d.path)
			}
			continue
		}
		d.form, d.path = "tgz", tgz
		all = append(all, d)
	}
	return all
}

// withPackedSubchart copies the chart at dir and replaces its subchart
// folder charts/helper with the archive helm packs of it.
func withPackedSubchart(t *testing.T, helm *helmRunner, dir string) string {
	dest := filepath.Join(t.TempDir(), "app")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dest, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dest, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dest, "charts", "helper")
	if _, ok := helm.packageChart(t, sub, filepath.Join(dest, "charts")); !ok {
		t.Fatal("helm could not pack the helper subchart")
	}
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	return dest
}

// ourValueSets reads testdata/values/<chart>/*.yaml.
func ourValueSets(t *testing.T, chart string) []struct{ name, yaml string } {
	files, _ := filepath.Glob(filepath.Join("testdata/values", chart, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no value sets for testdata/charts/%s in testdata/values/%s", chart, chart)
	}
	var sets []struct{ name, yaml string }
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, struct{ name, yaml string }{strings.TrimSuffix(filepath.Base(f), ".yaml"), string(b)})
	}
	return sets
}

// helmResult is what the helm binary did with one case.
type helmResult struct {
	ok             bool
	stdout, stderr []byte
}

// renderAllWithHelm runs helm for every case, two at a time.
func renderAllWithHelm(t *testing.T, helm *helmRunner, cases []*renderCase) []helmResult {
	results := make([]helmResult, len(cases))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2)
	var mu sync.Mutex
	var failures []string
	for i, c := range cases {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			out, errOut, ok, err := helm.run(templateArgs(c), c.values)
			if err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s: %v", c.name, err))
				mu.Unlock()
			}
			results[i] = helmResult{ok: ok, stdout: out, stderr: errOut}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	return results
}

// renderAllWithRenderer sends every case twice (the second time the
// archives come from the renderer's memory) to one renderer rendering two at
// a time, and returns the responses by id ("<case>/<pass>").
func renderAllWithRenderer(t *testing.T, cases []*renderCase) map[string]*wireResponse {
	s := startSession(t, "-j", "2")
	var reqs []wireRequest
	for pass := 1; pass <= 2; pass++ {
		for i, c := range cases {
			crds, tests := c.includeCRDs, c.skipTests
			reqs = append(reqs, wireRequest{
				ID: fmt.Sprintf("%d/%d", i, pass), Chart: c.chart, Release: c.release,
				Namespace: c.namespace, KubeVersion: c.kube, APIVersions: c.apis,
				IncludeCRDs: &crds, SkipTests: &tests, values: c.values,
			})
		}
	}
	all, code, err := s.exchange(reqs)
	if err != nil || code != 0 {
		t.Fatalf("renderer: exit %d, %v; stderr:\n%s", code, err, s.stderr)
	}
	byID := map[string]*wireResponse{}
	for _, r := range all {
		if byID[r.ID] != nil {
			t.Errorf("two responses for %s", r.ID)
		}
		byID[r.ID] = r
	}
	return byID
}

// compare says how the renderer's response differs from helm's run, or "".
func compare(c *renderCase, want helmResult, got *wireResponse) string {
	switch {
	case want.ok && !got.OK:
		return fmt.Sprintf("helm rendered, the renderer failed (%s): %s", got.ErrorKind, got.Body)
	case !want.ok && got.OK:
		return fmt.Sprintf("helm failed (%s), the renderer rendered", bytes.TrimSpace(want.stderr))
	case !want.ok:
		if got.ErrorKind != kindHelm {
			return fmt.Sprintf("error kind %q, want %q", got.ErrorKind, kindHelm)
		}
		printed := "Error: " + string(got.Body) + "\n"
		if strings.HasSuffix(string(want.stderr), printed) || sameSchemaErrors(string(want.stderr), printed) {
			return ""
		}
		return fmt.Sprintf("helm printed\n%s\nthe renderer says\n%s", want.stderr, printed)
	}
	w, g := want.stdout, got.Body
	if c.mask != nil {
		w = c.mask.ReplaceAll(w, []byte("<masked>"))
		g = c.mask.ReplaceAll(g, []byte("<masked>"))
	}
	if !bytes.Equal(w, g) {
		return firstDifference(w, g)
	}
	return ""
}

// schemaFailure starts helm's message for values that break a chart's
// values.schema.json.
const schemaFailure = "Error: values don't meet the specifications of the schema(s)"

// sameSchemaErrors tells whether helm's standard error ends with the same
// schema violations as printed, in any order: helm lists several violations
// in an order that changes from run to run of the binary itself.
func sameSchemaErrors(stderr, printed string) bool {
	i := strings.LastIndex(stderr, schemaFailure)
	if i < 0 || !strings.HasPrefix(printed, schemaFailure) {
		return false
	}
	w := strings.Split(stderr[i:], "\n")
	g := strings.Split(printed, "\n")
	slices.Sort(w)
	slices.Sort(g)
	return slices.Equal(w, g)
}

// firstDifference names the first line where two outputs differ.
func firstDifference(want, got []byte) string {
	wl := strings.SplitAfter(string(want), "\n")
	gl := strings.SplitAfter(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("output differs at line %d: helm %q, renderer %q (%d vs %d bytes)", i+1, w, g, len(want), len(got))
		}
	}
	return "outputs differ"
}

func absPath(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// relName is a chart folder's name below tests/charts.
func relName(dir string) string {
	parts := strings.Split(filepath.ToSlash(dir), "/")
	for j := len(parts) - 1; j > 0; j-- {
		if parts[j-1] == "charts" {
			return strings.Join(parts[j:], "/")
		}
	}
	return parts[len(parts)-1]
}
