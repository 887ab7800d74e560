package main

import (
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/validation"
	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// The baseline a patch is applied to: a control-plane config that machinery's
// generate package makes, as `talosctl gen config` does. The Kubernetes
// version is the one the pinned machinery release defaults to.
const (
	baselineClusterName = "strata-substrate-check"
	baselineEndpoint    = "https://controlplane.invalid:6443"
	// talosctl gen config's default install disk; metal mode needs one.
	baselineInstallDisk = "/dev/sda"
)

// talosMode stands for a Talos runtime mode when validating. validation.RuntimeMode
// is an interface the machinery leaves to Talos itself (machined's
// runtime.Mode in internal/app/machined/pkg/runtime/mode.go): metal needs an
// install section, container runs inside a container, cloud neither.
type talosMode string

func (m talosMode) String() string        { return string(m) }
func (m talosMode) RequiresInstall() bool { return m == "metal" }
func (m talosMode) InContainer() bool     { return m == "container" }

// The modes each patch is validated in: a patch for a CNI must hold on any
// platform the substrate may run on.
var talosModes = []talosMode{"metal", "cloud", "container"}

// newTalosChecker generates the baseline once (fresh secrets; they reach no
// output) and returns a checker that patches a copy of it per file.
func newTalosChecker() (checker, error) {
	input, err := generate.NewInput(baselineClusterName, baselineEndpoint, constants.DefaultKubernetesVersion,
		generate.WithInstallDisk(baselineInstallDisk))
	if err != nil {
		return nil, err
	}
	cfg, err := input.Config(machine.TypeControlPlane)
	if err != nil {
		return nil, err
	}
	baseline, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, err
	}
	// The baseline itself must pass, or every verdict below would be noise.
	for _, mode := range talosModes {
		if _, err := cfg.Validate(mode, validation.WithLocal(), validation.WithStrict()); err != nil {
			return nil, fmt.Errorf("baseline invalid in %s mode: %w", mode, err)
		}
	}
	return func(raw []byte) []string { return checkTalosPatch(baseline, raw) }, nil
}

// checkTalosPatch loads raw as a patch (strategic merge or JSON 6902, both
// decoded strictly), applies it to the baseline, reloads the result strictly
// and validates it as `talosctl validate --strict` does, in every mode.
func checkTalosPatch(baseline, raw []byte) []string {
	patch, err := configpatcher.LoadPatch(raw)
	if err != nil {
		return prefixed("not a Talos config patch: ", reasons(err))
	}
	// A file of no document (empty, or only comments) loads as an empty
	// JSON 6902 patch, which would change nothing.
	if ops, isJSON := patch.(jsonpatch.Patch); isJSON && len(ops) == 0 {
		return []string{"not a Talos config patch: the file holds no document"}
	}
	out, err := configpatcher.Apply(configpatcher.WithBytes(baseline), []configpatcher.Patch{patch})
	if err != nil {
		return prefixed("patch does not apply: ", reasons(err))
	}
	// Judge the merged config as a node would receive it: encoded, then
	// loaded again by the strict loader.
	merged, err := out.Bytes()
	if err != nil {
		return prefixed("patched config does not encode: ", reasons(err))
	}
	cfg, err := configpatcher.WithBytes(merged).Config()
	if err != nil {
		return prefixed("patched config does not load: ", reasons(err))
	}
	return byMode(func(mode talosMode) []string {
		_, err := cfg.Validate(mode, validation.WithLocal(), validation.WithStrict())
		return reasons(err)
	})
}

// byMode runs validate per mode and merges the reasons: one a mode alone
// gives is marked with that mode; order is that of first appearance.
func byMode(validate func(talosMode) []string) []string {
	var order []string
	modes := map[string][]string{}
	for _, mode := range talosModes {
		for _, reason := range validate(mode) {
			seen := modes[reason]
			if len(seen) == 0 {
				order = append(order, reason)
			}
			if len(seen) == 0 || seen[len(seen)-1] != string(mode) {
				modes[reason] = append(seen, string(mode))
			}
		}
	}
	out := make([]string, 0, len(order))
	for _, reason := range order {
		line := "invalid: " + reason
		if len(modes[reason]) < len(talosModes) {
			line += " (in " + strings.Join(modes[reason], ", ") + " mode)"
		}
		out = append(out, line)
	}
	return out
}
