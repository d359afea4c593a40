package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/testbed"
	"github.com/csi-olm/csi-olm/testbed/dev"
)

// TestUpDownRealNode runs `dev up --node=real` as a developer does: a real node, the catalog
// served from a catalog image that OLM runs as a registry pod (up waits until it is READY), and
// `dev down` putting the host back as it was.
//
// It lives here, not beside the verbs, because it needs what `make e2e` installs (containerd, the
// node's tools), and a machine runs one real node: the shared one of the other tests is stopped
// first, and the next test that needs it starts it again.
func TestUpDownRealNode(t *testing.T) {
	requireRealNodeProcess(t)
	stopRealNode()
	realNode.Lock()
	defer realNode.Unlock()
	// dev up undoes a node abandoned by an earlier killed run; undo it before the snapshot, or
	// that cleanup would read as dev down changing the host.
	if err := testbed.UndoAbandonedNode(t.Logf); err != nil {
		t.Fatal(err)
	}
	before, err := testbed.HostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	var out bytes.Buffer
	stop := &dev.Down{Home: home, Out: &out}
	t.Cleanup(func() { _ = stop.Run(context.Background()) })
	u := &dev.Up{Home: home, Level: "olm", Node: "real", Out: &out,
		Catalogs: map[string]string{"certified-operators": tree.Path("../../catalog/certified", clusterMinor)}}
	if err := u.Run(context.Background()); err != nil {
		t.Fatalf("dev up --node=real: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "serving "+tree.Path("../../catalog/certified", clusterMinor)+" as CatalogSource openshift-marketplace/certified-operators from image ") {
		t.Errorf("dev up did not serve the catalog from an image:\n%s", out.String())
	}
	st, err := dev.ReadState(dev.StateFile(home))
	if err != nil || st == nil || !st.RealNode {
		t.Fatalf("state %+v, %v: want a real node recorded", st, err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfigOrDie(config).CoreV1().Nodes().Get(context.Background(), testbed.RealNodeName, metav1.GetOptions{})
	if err != nil || node.Labels[testbed.RealNodeLabel] != "true" {
		t.Fatalf("node %s through the printed kubeconfig: %v, labels %v", testbed.RealNodeName, err, node.Labels)
	}

	if err := stop.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	after, err := testbed.HostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("dev down left the host changed (-before +after):\n%s", diff)
	}
}
