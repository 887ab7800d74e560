package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// maxFileBytes bounds one file: the API server stores no object larger than
// about 1.5 MiB, so a larger file holds nothing Flux could apply.
const maxFileBytes = 4 << 20

// folder is what a rendered component folder holds for helm-controller: its
// one HelmRelease and the objects `valuesFrom` can name.
type folder struct {
	release *helmv2.HelmRelease
	sources []client.Object
}

// readFolder decodes every document of the folder's top-level `*.yaml`
// files, in name order, with the Kubernetes and Flux API types and unknown
// fields refused.
func readFolder(dir string) (*folder, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	found := &folder{}
	seen := map[string]string{}
	for _, entry := range entries {
		if entry.IsDir() || !strings.HasSuffix(entry.Name(), ".yaml") {
			continue
		}
		path := filepath.Join(dir, entry.Name())
		docs, err := readDocuments(path)
		if err != nil {
			return nil, err
		}
		for i, doc := range docs {
			where := fmt.Sprintf("%s: document %d", path, i+1)
			obj, err := decodeDocument(doc, found)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if obj == nil {
				continue
			}
			key := obj.GetObjectKind().GroupVersionKind().Kind + " " + obj.GetNamespace() + "/" + obj.GetName()
			if first, dup := seen[key]; dup {
				return nil, fmt.Errorf("%s: %s is defined twice (first in %s)", where, key, first)
			}
			seen[key] = where
		}
	}
	if found.release == nil {
		return nil, fmt.Errorf("%s: no HelmRelease (helm.toolkit.fluxcd.io/v2) in its *.yaml files", dir)
	}
	return found, nil
}

// readDocuments splits a file into its YAML documents, leaving out empty
// ones.
func readDocuments(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(raw) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileBytes)
	}
	reader := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// stripComments drops whole-line comments, so a document of comments alone
// counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// decodeDocument keeps a HelmRelease, ConfigMap or Secret (returned, to be
// checked for duplicates) and passes over every other kind (nil).
func decodeDocument(doc []byte, found *folder) (client.Object, error) {
	var head metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if head.APIVersion == "" || head.Kind == "" {
		return nil, errors.New("not a Kubernetes object: apiVersion or kind is missing")
	}
	switch {
	case head.Kind == "HelmRelease" && strings.HasPrefix(head.APIVersion, helmv2.GroupVersion.Group+"/"):
		if head.APIVersion != helmv2.GroupVersion.String() {
			return nil, fmt.Errorf("HelmRelease %s: only %s is read", head.APIVersion, helmv2.GroupVersion)
		}
		hr := &helmv2.HelmRelease{}
		if err := decodeStrict(doc, head.Kind, hr); err != nil {
			return nil, err
		}
		if found.release != nil {
			return nil, fmt.Errorf("a second HelmRelease (%s; the first is %s): a component folder has one",
				hr.Name, found.release.Name)
		}
		found.release = hr
		return hr, nil
	case head.APIVersion == "v1" && head.Kind == "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err := decodeStrict(doc, head.Kind, cm); err != nil {
			return nil, err
		}
		found.sources = append(found.sources, cm)
		return cm, nil
	case head.APIVersion == "v1" && head.Kind == "Secret":
		secret := &corev1.Secret{}
		if err := decodeStrict(doc, head.Kind, secret); err != nil {
			return nil, err
		}
		// The API server writes `stringData` over `data` and keeps only
		// `data`; helm-controller reads `data`.
		for k, v := range secret.StringData {
			if secret.Data == nil {
				secret.Data = map[string][]byte{}
			}
			secret.Data[k] = []byte(v)
		}
		secret.StringData = nil
		found.sources = append(found.sources, secret)
		return secret, nil
	}
	return nil, nil
}

// decodeStrict decodes one object as the API server would accept it, and
// requires a name and a namespace: without a namespace, which one the
// object lands in depends on how it is applied, not on the folder.
func decodeStrict(doc []byte, kind string, obj client.Object) error {
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	if obj.GetName() == "" {
		return fmt.Errorf("%s without metadata.name", kind)
	}
	if obj.GetNamespace() == "" {
		return fmt.Errorf("%s %s without metadata.namespace", kind, obj.GetName())
	}
	return nil
}
