package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/testbed"
)

// flowStall is how long an end-to-end flow may see nothing new before it counts as stuck. Every
// wait of the test bed and of these tests reports each change it sees (an object's new revision,
// a condition's new reason, a CSV's new phase) to the flow's context (internal/progress), so a
// flow fails when nothing moves for this long, not when a slow machine takes longer over it than
// a quick one did. The longest silent step of a flow on an idle machine (an image pushed, a
// ClusterExtension's Helm release applied) takes about a minute.
const flowStall = 5 * time.Minute

func discoveryFor(s *testbed.Stack) (*discovery.DiscoveryClient, error) {
	return discovery.NewDiscoveryClientForConfig(s.Config)
}

// waitOwnedGone waits until no object of any listable type names owner as an owner: what a
// deleted owner owned is deleted by the garbage collector after the owner itself is gone, so an
// owner's absence alone does not say that its objects are. A new owner of the same name created
// before then meets the old one's objects: OLM v1 refuses to adopt a CRD another
// ClusterExtension still controls.
func waitOwnedGone(ctx context.Context, tb testing.TB, s *testbed.Stack, owner string, uid types.UID) {
	tb.Helper()
	disco, err := discoveryFor(s)
	if err != nil {
		tb.Fatal(err)
	}
	meta, err := metadata.NewForConfig(s.Config)
	if err != nil {
		tb.Fatal(err)
	}
	var left []string
	var lookErr error
	// Each look lists every type, so not as often as testutil.Eventually looks. What is left
	// shrinking is the wait's progress.
	var seen progress.Reason
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left, lookErr = ownedBy(ctx, disco, meta, uid)
		if lookErr == nil {
			seen.Note(ctx, "what "+owner+" owned", strings.Join(left, ", "))
		}
		return lookErr == nil && len(left) == 0, nil
	})
	if err != nil {
		tb.Fatalf("what %s owned is not gone: %v (still there: %s; the last look's error: %v)", owner, progress.Cause(ctx), strings.Join(left, ", "), lookErr)
	}
}

// ownedBy lists, as "resource namespace/name", every object with an owner reference to uid.
func ownedBy(ctx context.Context, disco discovery.DiscoveryInterface, meta metadata.Interface, uid types.UID) ([]string, error) {
	// A group whose API service is down fails discovery without failing the others.
	lists, err := disco.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the API's resources: %w", err)
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			objs, err := meta.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, o := range objs.Items {
				for _, ref := range o.OwnerReferences {
					if ref.UID == uid {
						left = append(left, fmt.Sprintf("%s %s", r.Name, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}))
					}
				}
			}
		}
	}
	sort.Strings(left)
	return left, nil
}
