package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A renderer whose parent dies goes too, even while its input stays open.
func TestRendererDiesWithItsParent(t *testing.T) {
	bin := rendererBinary(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open: the renderer never sees its input end
	defer r.Close()
	parent := exec.Command("/bin/sh", "-c", `"$0" <&3 >/dev/null 2>&1 & echo $!; sleep 0.2`, bin)
	parent.ExtraFiles = []*os.File{r}
	out, err := parent.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(out)))
	if err != nil {
		t.Fatalf("parent printed %q", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return // gone, or dead and waiting to be reaped
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
	t.Fatalf("renderer %d still runs after its parent ended", pid)
}
