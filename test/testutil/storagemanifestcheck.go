package testutil

import "testing"

// StorageManifestCheck returns storage-manifest-check, the checker of the drivers'
// external-storage test manifests (hack/tools/kube/cmd/storage-manifest-check), which `make test`
// builds and passes in CSI_OLM_STORAGE_MANIFEST_CHECK. Without it the test is skipped, saying how
// to run it.
func StorageManifestCheck(tb testing.TB) string {
	tb.Helper()
	return toolFromEnv(tb, "CSI_OLM_STORAGE_MANIFEST_CHECK", "storage-manifest-check")
}
