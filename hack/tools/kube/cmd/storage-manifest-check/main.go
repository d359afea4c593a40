// Command storage-manifest-check checks external-storage test driver manifests (e2e.test's
// --storage.testdriver=FILE, openshift-tests' TEST_CSI_DRIVER_FILES) with the upstream loader of
// the k8s.io/kubernetes that ../../go.mod pins, and then strictly (internal/storagemanifest).
// Built by `hack/tools.sh storage-manifest-check`.
//
//	storage-manifest-check FILE...
//
// It prints "FILE: ok" for each good file, and every problem of each bad one on stderr; the exit
// status is 1 when a file is bad, 2 on wrong usage. The upstream loader logs what it decoded on
// stdout.
package main

import (
	"fmt"
	"os"

	"github.com/csi-olm/csi-olm/hack/tools/kube/internal/storagemanifest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: storage-manifest-check FILE...")
		os.Exit(2)
	}
	status := 0
	for _, file := range os.Args[1:] {
		if err := storagemanifest.Check(file); err != nil {
			fmt.Fprintf(os.Stderr, "storage-manifest-check: %v\n", err)
			status = 1
			continue
		}
		fmt.Printf("%s: ok\n", file)
	}
	os.Exit(status)
}
