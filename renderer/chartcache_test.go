package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	helmloader "helm.sh/helm/v4/pkg/chart/loader"
	v2 "helm.sh/helm/v4/pkg/chart/v2"
)

// writeArchive packs files (chart-relative name -> content) as helm packs a
// chart: one top folder, gzip-compressed tar.
func writeArchive(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		hdr := &tar.Header{Name: "c/" + name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// packDir packs a chart folder with writeArchive.
func packDir(t *testing.T, dir, path string) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == ".bak" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	writeArchive(t, path, files)
}

func tinyChart(value string) map[string]string {
	return map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"values.yaml":       "a: " + value + "\n",
		"templates/cm.yaml": "kind: ConfigMap\n",
	}
}

func valueA(t *testing.T, c *chartCache, path string) any {
	t.Helper()
	ch, err := c.load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ch.(*v2.Chart).Values["a"]
}

func TestCacheSeesAReplacedArchive(t *testing.T) {
	c := newChartCache(8, 1<<20)
	p := filepath.Join(t.TempDir(), "c.tgz")
	writeArchive(t, p, tinyChart("one"))
	if got := valueA(t, c, p); got != "one" {
		t.Fatalf("first load: %v", got)
	}
	if c.len() != 1 {
		t.Fatalf("%d archives remembered", c.len())
	}
	writeArchive(t, p, tinyChart("two")) // same size, replaced by rename
	if got := valueA(t, c, p); got != "two" {
		t.Fatalf("after replacing: %v", got)
	}
	writeArchive(t, p, tinyChart("three"))
	if got := valueA(t, c, p); got != "three" {
		t.Fatalf("after replacing again: %v", got)
	}
}

func TestCacheIsBounded(t *testing.T) {
	dir := t.TempDir()
	c := newChartCache(2, 1<<20)
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("c%d.tgz", i))
		writeArchive(t, p, tinyChart(fmt.Sprint(i)))
		valueA(t, c, p)
	}
	if c.len() != 2 {
		t.Errorf("%d archives remembered, want 2", c.len())
	}
	small := newChartCache(8, 10) // smaller than any chart
	p := filepath.Join(dir, "c0.tgz")
	if got := valueA(t, small, p); fmt.Sprint(got) != "0" || small.len() != 0 {
		t.Errorf("value %v, %d remembered", got, small.len())
	}
}

func TestEachLoadGivesItsOwnChart(t *testing.T) {
	c := newChartCache(8, 1<<20)
	p := filepath.Join(t.TempDir(), "c.tgz")
	writeArchive(t, p, tinyChart("one"))
	first, _ := c.load(p)
	first.(*v2.Chart).Values["a"] = "changed by a render"
	if got := valueA(t, c, p); got != "one" {
		t.Errorf("second load sees %v", got)
	}
}

func TestBrokenArchivesFailAsHelmSays(t *testing.T) {
	dir := t.TempDir()
	notGzip := filepath.Join(dir, "c.tgz")
	if err := os.WriteFile(notGzip, []byte("plain text, not a chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	noChart := filepath.Join(dir, "d.tgz")
	writeArchive(t, noChart, map[string]string{"values.yaml": "a: 1\n"})
	c := newChartCache(8, 1<<20)
	for _, path := range []string{notGzip, noChart} {
		_, want := helmloader.Load(path)
		if _, err := c.load(path); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", filepath.Base(path), err, want)
		}
	}
	if c.len() != 0 {
		t.Errorf("broken archives remembered")
	}
}

// Renders at once give what the same renders give one by one; run with
// -race, this also checks that they share nothing they write.
func TestConcurrentRendersMatchSerialOnes(t *testing.T) {
	prepareSDK(os.Stderr)
	tgz := filepath.Join(t.TempDir(), "app.tgz")
	packDir(t, absPath(t, "testdata/charts/app"), tgz)
	apiLists := [][]string{nil, {"example.com/v1"}, {"monitoring.coreos.com/v1/ServiceMonitor", "example.com/v1"}}
	var reqs []*request
	for i := range 24 {
		chart := absPath(t, "testdata/charts/app")
		if i%2 == 1 {
			chart = tgz
		}
		reqs = append(reqs, &request{
			ID: fmt.Sprint(i), Chart: chart, Release: fmt.Sprintf("r%d", i%5), Namespace: "ns",
			KubeVersion: "v1.3" + fmt.Sprint(i%6) + ".0", APIVersions: apiLists[i%3],
			IncludeCRDs: true, SkipTests: i%4 == 0, Values: []byte(fmt.Sprintf("replicas: %d\nqueue: {enabled: %v}\n", i, i%3 == 0)),
		})
	}
	serial := make([][]byte, len(reqs))
	for i, r := range reqs {
		out, err := render(r, newChartCache(0, 0))
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		serial[i] = out
	}
	shared := newChartCache(4, 64<<20)
	var wg sync.WaitGroup
	for round := range 3 {
		for i, r := range reqs {
			wg.Go(func() {
				out, err := render(r, shared)
				if err != nil || !bytes.Equal(out, serial[i]) {
					t.Errorf("round %d request %s: %v; %s", round, r.ID, err, firstDifference(serial[i], out))
				}
			})
		}
	}
	wg.Wait()
}
