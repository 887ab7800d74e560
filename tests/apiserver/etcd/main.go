// Command etcd is the etcd server that kube-apiserver v1.35.4 is tested
// with (the version k8s.io/kubernetes v1.35.4 requires), built from the
// Go module proxy for strata's API server tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"

	"strata.test/apiserver/watch"
)

func main() {
	watch.ExitWhenStdinCloses()
	etcdmain.Main(os.Args)
}
