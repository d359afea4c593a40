package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// tooLongAccessPoint is an access point ID the community CRD takes (its pattern has no length)
// and the certified CRD refuses (at most 64 characters).
var tooLongAccessPoint = "fsap-" + strings.Repeat("0123456789abcdef", 4) + "0"

// invalidSharedVolumeStopsTheSwitch is the community user whose cluster holds a SharedVolume the
// certified CRD refuses, on the real node, before the switch of TestSourceSwitchOnRealNode:
// `csi-olm migrate subscription` refuses before it changes anything, naming the SharedVolume and
// what the CRD of target (the bundle it would install, read from its published image) refuses.
// Once the SharedVolume is fixed, the switch may go on.
func invalidSharedVolumeStopsTheSwitch(ctx context.Context, t *testing.T, s *testbed.Stack, ns, target string) {
	t.Helper()
	c := s.Client
	sv := &sharedvolumev1alpha1.SharedVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "long-access-point"},
		Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: tooLongAccessPoint},
	}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sv.Namespace}}))
	must(t, c.Create(ctx, sv))
	var sub operatorsv1alpha1.Subscription
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efsPackage}, &sub))
	before := uidsOf(ctx, t, c, ns)

	// The verb refuses up front, with what the target's CRD refuses.
	var out bytes.Buffer
	err := migrateSubscription(ctx, s, false, &out)
	for _, want := range []string{
		fmt.Sprintf("SharedVolume %s/%s, under the CRD of %s:", sv.Namespace, sv.Name, target),
		"spec.accessPointID: Too long: may not be more than 64 bytes",
		"nothing was changed",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("migrate subscription over an invalid SharedVolume: %v, want %q\n%s", err, want, out.String())
		}
	}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(&sub), &sub))
	if sub.Spec.CatalogSource != communitySource || sub.Status.State != operatorsv1alpha1.SubscriptionStateAtLatest {
		t.Errorf("after the refused verb the Subscription is on %s, %s", sub.Spec.CatalogSource, sub.Status.State)
	}
	if after := uidsOf(ctx, t, c, ns); !maps.Equal(before, after) {
		t.Errorf("the refused verb changed the community install: %v, was %v", after, before)
	}

	switchByHandFails(ctx, t, s, ns, target, sv, before)

	// The admin fixes the SharedVolume (the community CRD lets its spec change).
	must(t, c.Get(ctx, client.ObjectKeyFromObject(sv), sv))
	fixed := client.MergeFrom(sv.DeepCopy())
	sv.Spec.AccessPointID = "fsap-0123456789abcdef2"
	must(t, c.Patch(ctx, sv, fixed))
}

// switchByHandFails is the admin who switches the Subscription's source by hand instead: OLM
// fails the InstallPlan in its own words, and the community operator and its driver keep
// running with nothing lost. OLM has by then made the new CSV, left Pending, and moved the
// community CSV to Replacing; the verb, run once the SharedVolume is fixed, takes over from there.
func switchByHandFails(ctx context.Context, t *testing.T, s *testbed.Stack, ns, target string, sv *sharedvolumev1alpha1.SharedVolume, before map[string]types.UID) {
	t.Helper()
	c := s.Client
	var sub operatorsv1alpha1.Subscription
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efsPackage}, &sub))
	switched := client.MergeFrom(sub.DeepCopy())
	sub.Spec.CatalogSource = certifiedSource
	must(t, c.Patch(ctx, &sub, switched))
	var failed operatorsv1alpha1.InstallPlan
	must(t, testutil.Eventually(ctx, "OLM to fail the InstallPlan of "+target, func(ctx context.Context) error {
		var ips operatorsv1alpha1.InstallPlanList
		if err := c.List(ctx, &ips, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, ip := range ips.Items {
			if slices.Contains(ip.Spec.ClusterServiceVersionNames, target) && ip.Status.Phase == operatorsv1alpha1.InstallPlanPhaseFailed {
				failed = ip
				return nil
			}
		}
		return fmt.Errorf("no Failed InstallPlan of %s yet", target)
	}))
	var said []string
	for _, cond := range failed.Status.Conditions {
		said = append(said, cond.Message)
	}
	for _, want := range []string{
		`error validating existing CRs against new CRD's schema for "sharedvolumes.aws-efs.managed.openshift.io"`,
		fmt.Sprintf(`SharedVolume "%s/%s": updated validation is too restrictive: [].spec.accessPointID: Too long: may not be more than 64 bytes`, sv.Namespace, sv.Name),
	} {
		if !strings.Contains(strings.Join(said, "\n"), want) {
			t.Errorf("InstallPlan %s failed saying %q, want %q", failed.Name, said, want)
		}
	}
	// Nothing that runs changed: the same driver, pods and SharedVolumes, the community
	// operator's Deployment still available. Only the CSVs' phases moved.
	after := uidsOf(ctx, t, c, ns)
	for key, uid := range before {
		if !strings.HasPrefix(key, "CSV ") && after[key] != uid {
			t.Errorf("the failed InstallPlan changed %s: %s, was %s", key, after[key], uid)
		}
	}
	var operator appsv1.Deployment
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: csvDeployment(t, communityCSVFile).Name}, &operator))
	if operator.Status.AvailableReplicas < 1 {
		t.Errorf("the community operator's Deployment %s is not available after the failed InstallPlan", operator.Name)
	}
}

// uidsOf are the UIDs of what a community install keeps while a switch is refused: its CSVs, its
// driver's DaemonSet, its pods (the operator's among them) and every SharedVolume.
func uidsOf(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	must(t, c.List(ctx, &csvs, client.InNamespace(ns)))
	for _, o := range csvs.Items {
		uids["CSV "+o.Name+" "+string(o.Status.Phase)] = o.UID
	}
	var ds appsv1.DaemonSet
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.NodeDaemonSet}, &ds))
	uids["DaemonSet "+ds.Name] = ds.UID
	var pods corev1.PodList
	must(t, c.List(ctx, &pods, client.InNamespace(ns)))
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			uids["Pod "+p.Name] = p.UID
		}
	}
	var svs sharedvolumev1alpha1.SharedVolumeList
	must(t, c.List(ctx, &svs))
	for _, o := range svs.Items {
		uids["SharedVolume "+o.Namespace+"/"+o.Name] = o.UID
	}
	return uids
}
