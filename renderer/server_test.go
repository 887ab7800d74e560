package main

// The protocol's promises, checked on the built program: answers matched by
// id, bad requests answered without stopping, broken framing ending the
// process with status 2, deadlines, and a clean exit when input ends.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func appRequest(t *testing.T, id, values string) wireRequest {
	return wireRequest{
		ID: id, Chart: absPath(t, "testdata/charts/app"), Release: "demo",
		Namespace: "apps", KubeVersion: "v1.35.0", values: []byte(values),
	}
}

func spinRequest(t *testing.T, id string, timeoutMS int64) wireRequest {
	return wireRequest{
		ID: id, Chart: absPath(t, "testdata/slow/spin"), Release: "spin",
		Namespace: "apps", TimeoutMS: timeoutMS,
	}
}

func byID(t *testing.T, all []*wireResponse) map[string]*wireResponse {
	m := map[string]*wireResponse{}
	for _, r := range all {
		if m[r.ID] != nil {
			t.Errorf("two responses for id %q", r.ID)
		}
		m[r.ID] = r
	}
	return m
}

func TestHelloThenCleanExitOnEndOfInput(t *testing.T) {
	s := startSession(t, "-j", "3")
	if s.hello["hello"] != "strata-helm-renderer" || s.hello["protocol"] != float64(protocolVersion) || s.hello["jobs"] != float64(3) {
		t.Errorf("hello frame %v", s.hello)
	}
	if h, _ := s.hello["helm"].(string); !strings.Contains(h, `Version:"v4.3"`) {
		t.Errorf("hello names helm %q", h)
	}
	all, code, err := s.finish()
	if err != nil || code != 0 || len(all) != 0 {
		t.Fatalf("exit %d, %v, %d responses; stderr: %s", code, err, len(all), s.stderr)
	}
}

func TestEachRequestIsAnsweredOnceByID(t *testing.T) {
	s := startSession(t, "-j", "2")
	var reqs []wireRequest
	for i := range 12 {
		reqs = append(reqs, appRequest(t, fmt.Sprintf("r%d", i), fmt.Sprintf("replicas: %d\n", i+1)))
	}
	all, code, err := s.exchange(reqs)
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stderr: %s", code, err, s.stderr)
	}
	got := byID(t, all)
	for i := range 12 {
		r := got[fmt.Sprintf("r%d", i)]
		if r == nil || !r.OK {
			t.Fatalf("r%d: %+v", i, r)
		}
		if want := fmt.Sprintf("  replicas: %d\n", i+1); !strings.Contains(string(r.Body), want) {
			t.Errorf("r%d does not hold %q", i, want)
		}
	}
}

func TestBadRequestsAreAnsweredAndReadingGoesOn(t *testing.T) {
	s := startSession(t)
	app := absPath(t, "testdata/charts/app")
	raw := []string{
		`{"id":"unknown-field","chart":"` + app + `","release":"a","colour":"red","len":0}`,
		`{"id":"no-release","chart":"` + app + `","len":0}`,
		`{"id":"relative","chart":"testdata/charts/app","release":"a","len":0}`,
		`{"id":"negative-timeout","chart":"` + app + `","release":"a","timeout_ms":-1,"len":0}`,
		`{"id":"wrong-type","chart":"` + app + `","release":"a","api_versions":"v1","len":3}`,
	}
	for _, line := range raw {
		body := ""
		if strings.Contains(line, `"len":3`) {
			body = "a: "
		}
		if err := s.sendRaw([]byte(line + "\n\n" + body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.send(appRequest(t, "good", "")); err != nil {
		t.Fatal(err)
	}
	all, code, err := s.finish()
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stderr: %s", code, err, s.stderr)
	}
	got := byID(t, all)
	for _, id := range []string{"unknown-field", "no-release", "relative", "negative-timeout", "wrong-type"} {
		if r := got[id]; r == nil || r.OK || r.ErrorKind != kindRequest {
			t.Errorf("%s: %+v", id, r)
		} else {
			t.Logf("%s: %s", id, r.Body)
		}
	}
	if r := got["good"]; r == nil || !r.OK {
		t.Errorf("good: %+v", r)
	}
}

func TestBrokenFramingEndsWithStatus2(t *testing.T) {
	for name, input := range map[string]string{
		"not JSON":         "render app please\n",
		"no length":        `{"id":"a","chart":"/x","release":"a"}` + "\n",
		"input ends early": `{"id":"a","chart":"/x","release":"a","len":10}` + "\nabc",
		"header unended":   `{"id":"a"`,
	} {
		t.Run(name, func(t *testing.T) {
			s := startSession(t)
			if err := s.sendRaw([]byte(input)); err != nil {
				t.Fatal(err)
			}
			_, code, err := s.finish()
			if err != nil || code != 2 || !strings.Contains(s.stderr.String(), "framing") {
				t.Fatalf("exit %d, %v; stderr: %s", code, err, s.stderr)
			}
		})
	}
}

func TestARenderPastItsDeadlineIsAnsweredAndAbandoned(t *testing.T) {
	s := startSession(t, "-j", "1")
	start := time.Now()
	all, code, err := s.exchange([]wireRequest{
		spinRequest(t, "spin", 300),
		spinRequest(t, "spin", 300), // the same id, while the first renders
		appRequest(t, "after", ""),
	})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stderr: %s", code, err, s.stderr)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s", took)
	}
	if len(all) != 3 {
		t.Fatalf("%d responses", len(all))
	}
	kinds := map[string]int{}
	for _, r := range all {
		kinds[r.ID+":"+r.ErrorKind]++
	}
	// The duplicate is refused while the first is under way; the renderer
	// goes on with the next request while the spinning render is left behind.
	if kinds["spin:"+kindTimeout] != 1 || kinds["spin:"+kindRequest] != 1 || kinds["after:"] != 1 {
		t.Errorf("responses %v", kinds)
	}
}

func TestTooManyAbandonedRendersEndTheRenderer(t *testing.T) {
	s := startSession(t, "-max-abandoned", "0")
	all, code, err := s.exchange([]wireRequest{spinRequest(t, "spin", 200)})
	if err != nil || code != 3 || len(all) != 1 || all[0].ErrorKind != kindTimeout {
		t.Fatalf("exit %d, %v, %v; stderr: %s", code, err, all, s.stderr)
	}
}

func TestAnArchiveOrDirectoryThatIsNotAChart(t *testing.T) {
	s := startSession(t)
	r := appRequest(t, "values-as-chart", "")
	r.Chart = absPath(t, "testdata/values/app/overrides.yaml")
	d := appRequest(t, "folder-without-chart", "")
	d.Chart = absPath(t, "testdata/values")
	all, code, err := s.exchange([]wireRequest{r, d})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	got := byID(t, all)
	if g := got["values-as-chart"]; g == nil || g.ErrorKind != kindHelm || !strings.Contains(string(g.Body), "seems to be a YAML file") {
		t.Errorf("values-as-chart: %+v", g)
	}
	if g := got["folder-without-chart"]; g == nil || g.ErrorKind != kindHelm || !strings.Contains(string(g.Body), "Chart.yaml") {
		t.Errorf("folder-without-chart: %+v", g)
	}
}
