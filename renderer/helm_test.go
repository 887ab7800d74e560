package main

// The helm binary, run exactly as strata runs it (src/inflate/helm.rs and
// src/inflate/mod.rs): a cleared environment whose helm folders point at a
// private folder, KUBECONFIG pointing nowhere, LC_ALL=C, that folder as the
// working directory, and the merged values on standard input.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// helmBinary finds the helm to compare with: $HELM_BIN, else `helm` on the
// PATH. Without one the comparison is skipped, except in CI, where it fails.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("HELM_BIN=%s: %v", p, err)
		}
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	msg := "no helm binary (set HELM_BIN or put helm v4.3.2 on the PATH): " +
		"the byte-identity comparison with `helm template` did not run"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// helmRunner runs one helm binary in its own private home.
type helmRunner struct {
	bin  string
	home string
}

func newHelmRunner(t *testing.T) *helmRunner {
	return &helmRunner{bin: helmBinary(t), home: t.TempDir()}
}

// run runs helm with args and stdin; it returns standard output, standard
// error and whether helm exited successfully.
func (h *helmRunner) run(args []string, stdin []byte) (stdout, stderr []byte, ok bool, err error) {
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.home
	cmd.Env = []string{
		"HOME=" + h.home,
		"HELM_CACHE_HOME=" + filepath.Join(h.home, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(h.home, "data"),
		"HELM_CONFIG_HOME=" + filepath.Join(h.home, "config"),
		"KUBECONFIG=" + filepath.Join(h.home, "no-kubeconfig"),
		"HELM_NAMESPACE=default",
		"LC_ALL=C",
	}
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	runErr := cmd.Run()
	if _, exited := runErr.(*exec.ExitError); runErr != nil && !exited {
		return nil, nil, false, runErr
	}
	return out.Bytes(), errOut.Bytes(), runErr == nil, nil
}

// templateArgs is strata's command line for one release.
func templateArgs(c *renderCase) []string {
	args := []string{"template", c.release, c.chart, "--namespace", c.namespace}
	if c.kube != "" {
		args = append(args, "--kube-version", c.kube)
	}
	if c.includeCRDs {
		args = append(args, "--include-crds")
	}
	if c.skipTests {
		args = append(args, "--skip-tests")
	}
	args = append(args, "--values", "-")
	for _, a := range c.apis {
		args = append(args, "--api-versions", a)
	}
	return args
}

// packageChart packs the chart in dir into dest with `helm package`,
// returning the archive's path, or ok false when helm refuses to pack it.
func (h *helmRunner) packageChart(t *testing.T, dir, dest string) (string, bool) {
	t.Helper()
	out, errOut, ok, err := h.run([]string{"package", dir, "--destination", dest}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Logf("helm package %s: %s", dir, errOut)
		return "", false
	}
	// "Successfully packaged chart and saved it to: <path>\n"
	_, path, found := bytes.Cut(bytes.TrimSpace(out), []byte(": "))
	if !found {
		t.Fatalf("helm package printed %q", out)
	}
	return string(path), true
}
