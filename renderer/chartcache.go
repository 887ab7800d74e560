package main

// A small, bounded memory of chart archives already read. A loaded chart
// cannot itself be shared between renders: helm changes it while rendering
// (dependencies switched off by conditions are removed, imported values are
// merged into the parent). What is kept is the archive's unpacked files,
// which are only ever read; every render builds its own chart from them.
//
// Directories are not remembered: a file inside one can change without the
// directory's own size or time changing, and reading a directory costs no
// decompression.

import (
	"bytes"
	"container/list"
	"os"
	"sync"

	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart"
	helmloader "helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	v2 "helm.sh/helm/v4/pkg/chart/v2"
	v2loader "helm.sh/helm/v4/pkg/chart/v2/loader"
)

// archiveKey names one version of an archive on disk.
type archiveKey struct {
	path  string
	size  int64
	mtime int64 // nanoseconds
	inode uint64
}

type cachedArchive struct {
	key   archiveKey
	files []*archive.BufferedFile
	bytes int64
}

// chartCache remembers at most maxEntries archives holding at most maxBytes
// of unpacked files in all, forgetting the least recently used first.
type chartCache struct {
	maxEntries int
	maxBytes   int64

	mu      sync.Mutex
	used    int64
	order   *list.List // of *cachedArchive, most recent first
	entries map[archiveKey]*list.Element
}

func newChartCache(maxEntries int, maxBytes int64) *chartCache {
	return &chartCache{
		maxEntries: maxEntries,
		maxBytes:   maxBytes,
		order:      list.New(),
		entries:    map[archiveKey]*list.Element{},
	}
}

// load loads the chart at path (absolute), as helm's loader.Load does.
// Anything the fast path cannot do, or any failure on it, goes to helm's own
// loader, so that what is loaded, and every error, is helm's.
func (c *chartCache) load(path string) (chart.Charter, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || c.maxEntries == 0 {
		return helmloader.Load(path)
	}
	key := archiveKey{path: path, size: fi.Size(), mtime: fi.ModTime().UnixNano(), inode: inodeOf(fi)}
	if files := c.get(key); files != nil {
		if ch, err := v2loader.LoadFiles(files); err == nil {
			return ch, nil
		}
		return helmloader.Load(path)
	}
	files, ok := readV2Archive(path)
	if !ok {
		return helmloader.Load(path)
	}
	ch, err := v2loader.LoadFiles(files)
	if err != nil {
		return helmloader.Load(path)
	}
	c.put(key, files)
	return ch, nil
}

// readV2Archive unpacks an archive whose Chart.yaml is of chart API v1 or v2
// (the only ones that the cached path loads; v3 charts go through helm's
// loader each time).
func readV2Archive(path string) ([]*archive.BufferedFile, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	files, err := archive.LoadArchiveFiles(bytes.NewReader(raw))
	if err != nil {
		return nil, false
	}
	for _, f := range files {
		if f.Name != "Chart.yaml" {
			continue
		}
		var base struct {
			APIVersion string `json:"apiVersion,omitempty"`
		}
		if yaml.Unmarshal(f.Data, &base) != nil {
			return nil, false
		}
		switch base.APIVersion {
		case v2.APIVersionV1, v2.APIVersionV2, "":
			return files, true
		}
		return nil, false
	}
	return nil, false
}

func (c *chartCache) get(key archiveKey) []*archive.BufferedFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedArchive).files
}

func (c *chartCache) put(key archiveKey, files []*archive.BufferedFile) {
	var size int64
	for _, f := range files {
		size += int64(len(f.Data)) + int64(len(f.Name))
	}
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok {
		return
	}
	c.entries[key] = c.order.PushFront(&cachedArchive{key: key, files: files, bytes: size})
	c.used += size
	for c.order.Len() > c.maxEntries || c.used > c.maxBytes {
		last := c.order.Back()
		old := last.Value.(*cachedArchive)
		c.order.Remove(last)
		delete(c.entries, old.key)
		c.used -= old.bytes
	}
}

// len is how many archives are remembered.
func (c *chartCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
