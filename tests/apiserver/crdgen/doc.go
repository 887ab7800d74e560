// Package crdgen holds the module that generates HelmRelease's CRD for
// strata's API server tests (see go.mod and ../README.md).
package crdgen

import (
	// The API types controller-gen reads.
	_ "github.com/fluxcd/helm-controller/api/v2"
)
