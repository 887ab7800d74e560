// Command kube-apiserver is Kubernetes' API server of k8s.io/kubernetes
// v1.35.4, as its own command runs it, for strata's API server tests. Two
// additions for a test: it exits when the test that started it goes away
// (package watch), and it writes the service-account signing key the
// server requires when the file named by STRATA_TEST_SA_KEY is missing.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"strata.test/apiserver/watch"
)

func main() {
	watch.ExitWhenStdinCloses()
	if path := os.Getenv("STRATA_TEST_SA_KEY"); path != "" {
		if err := signingKey(path); err != nil {
			fmt.Fprintf(os.Stderr, "service-account key %s: %v\n", path, err)
			os.Exit(1)
		}
	}
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

// signingKey writes a new P-256 private key to path, unless a file is there.
func signingKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	block := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	return os.WriteFile(path, block, 0o600)
}
