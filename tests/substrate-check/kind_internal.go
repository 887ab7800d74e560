package main

import (
	"errors"
	"strings"
	"unsafe"

	// kind's loader and validation live in sigs.k8s.io/kind/pkg/internal/...,
	// which Go lets no other module import. The public cluster package links
	// them into the binary (its CreateWithRawConfig option calls the loader);
	// the declarations below reach them by symbol name instead.
	_ "sigs.k8s.io/kind/pkg/cluster"
)

// The functions `kind create cluster --config FILE` runs before it touches
// any container: encoding.Parse (apiVersion/kind check, strict decode into
// v1alpha4.Cluster, v1alpha4 defaults, conversion), config.SetDefaultsCluster
// (internal defaults, such as the cluster name) and (*config.Cluster).Validate.
// Their *config.Cluster is handled as an opaque pointer. The signatures are
// those of kind v0.33.0 (pinned in go.mod); kindSelfCheck proves at start-up
// that they still behave as such.

//go:linkname kindParse sigs.k8s.io/kind/pkg/internal/apis/config/encoding.Parse
func kindParse(raw []byte) (unsafe.Pointer, error)

//go:linkname kindSetDefaults sigs.k8s.io/kind/pkg/internal/apis/config.SetDefaultsCluster
func kindSetDefaults(cluster unsafe.Pointer)

//go:linkname kindValidate sigs.k8s.io/kind/pkg/internal/apis/config.(*Cluster).Validate
func kindValidate(cluster unsafe.Pointer) error

// kindParseAndValidate runs kind's own load, default and validate steps.
func kindParseAndValidate(raw []byte) error {
	cluster, err := kindParse(raw)
	if err != nil {
		return err
	}
	if cluster == nil {
		return errors.New("kind's loader returned no config")
	}
	kindSetDefaults(cluster)
	return kindValidate(cluster)
}

// kindSelfCheck proves kind's internal functions are reached and judge as
// expected: a minimal config passes, and a bad kubeProxyMode is named.
func kindSelfCheck() error {
	good := []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")
	if err := kindParseAndValidate(good); err != nil {
		return errors.New("kind's validation refused a minimal config: " + err.Error())
	}
	bad := []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking:\n  kubeProxyMode: self-check\n")
	err := kindParseAndValidate(bad)
	if err == nil || !strings.Contains(err.Error(), "self-check") {
		return errors.New("kind's validation did not refuse kubeProxyMode self-check; was kind upgraded past v0.33.0?")
	}
	return nil
}
