package main

import (
	"bytes"
	"errors"
	"io"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kinderrors "sigs.k8s.io/kind/pkg/errors"
)

// checkKindConfig judges a kind cluster config in two steps.
//
// First through kind's public API: the first YAML document is decoded into
// v1alpha4.Cluster with unknown fields refused (the YAML library and
// setting kind's own loader uses), which also runs the types' own
// UnmarshalYAML checks (mount propagation, port-mapping protocol).
//
// Then, only if that passed, through kind's own loader, defaults and
// validation, which kind keeps in internal packages (see kind_internal.go):
// they add the apiVersion/kind check, the cluster name, ipFamily, subnets,
// kubeProxyMode, node roles and images, ports and port-mapping clashes.
func checkKindConfig(raw []byte) []string {
	var cluster v1alpha4.Cluster
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&cluster); err != nil {
		if errors.Is(err, io.EOF) {
			return []string{"not a kind config: the file holds no YAML document"}
		}
		return prefixed("not a kind config: ", []string{oneLine(err.Error())})
	}
	return prefixed("invalid: ", kindReasons(kindParseAndValidate(raw)))
}

// kindReasons lists the errors of kind's aggregate one by one.
func kindReasons(err error) []string {
	if err == nil {
		return nil
	}
	if errs := kinderrors.Errors(err); len(errs) > 0 {
		out := make([]string, 0, len(errs))
		for _, e := range errs {
			out = append(out, oneLine(e.Error()))
		}
		return out
	}
	return []string{oneLine(err.Error())}
}
