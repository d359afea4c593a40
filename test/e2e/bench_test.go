package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// BenchmarkTestBed measures, per iteration, an API-server-only stack's start-up, an OLM stack's
// start-up (full level, then OLM ready), a Subscription's install of the community
// aws-efs-operator to Succeeded, a source switch to the certified catalog until AtLatestKnown,
// and the stack's total RSS. It reports the median of the iterations
// (`make bench` runs 5).
func BenchmarkTestBed(b *testing.B) {
	samples := map[string][]float64{}
	add := func(name string, v float64) { samples[name] = append(samples[name], v) }
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)

		begin := time.Now()
		api := testutil.StartTestBed(b, testbed.APIServer)
		add("apiserver-up-s", time.Since(begin).Seconds())
		api.Stop()

		f := startOLMFixture(ctx, b)
		add("full-up-s", f.stack.Timings["full"].Seconds())
		add("olm-ready-s", f.stack.Timings["olm"].Seconds())
		c, ns := f.stack.Client, testbed.OperatorsNamespace

		begin = time.Now()
		if err := f.subscribe(ctx, efsPackage, "stable", communitySource); err != nil {
			b.Fatal(err)
		}
		if err := testbed.WaitForCSV(ctx, c, ns, communityHeadCSV, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
			b.Fatal(err)
		}
		add("subscription-succeeded-s", time.Since(begin).Seconds())

		begin = time.Now()
		if err := f.switchSource(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := testbed.WaitForSubscription(ctx, c, ns, efsPackage, "AtLatestKnown", olm.AtLatestKnown(certifiedHeadCSV)); err != nil {
			b.Fatal(err)
		}
		add("switch-atlatest-s", time.Since(begin).Seconds())
		add("stack-rss-MiB", float64(f.stack.RSS())/(1<<20))
		f.stack.Stop()
		cancel()
	}
	for name, values := range samples {
		b.ReportMetric(testutil.Median(values), name)
	}
	// Wall time per iteration says nothing here; the metrics above are the figures.
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMigrate measures each migrate verb end to end on the OLM test bed, from its start to
// its exit with the migration done: `migrate subscription` on the community EFS install with
// three SharedVolumes, then `migrate cso` for EBS and for Manila. Set-up is not timed. It
// reports the medians of the iterations (`make bench` runs 5).
func BenchmarkMigrate(b *testing.B) {
	samples := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		f := startOLMFixture(ctx, b)
		installCommunityEFS(ctx, b, f)
		drivers := olmEraDrivers()
		installOLMEraDrivers(ctx, b, f, drivers...)
		var out bytes.Buffer
		begin := time.Now()
		if err := migrateSubscription(ctx, f.stack, false, &out); err != nil {
			b.Fatalf("%v\n%s", err, out.String())
		}
		samples["subscription-s"] = append(samples["subscription-s"], time.Since(begin).Seconds())
		for _, d := range drivers {
			begin = time.Now()
			if err := migrateCSO(ctx, f.stack, d.name, false, &out); err != nil {
				b.Fatalf("%v\n%s", err, out.String())
			}
			samples["cso-"+d.name+"-s"] = append(samples["cso-"+d.name+"-s"], time.Since(begin).Seconds())
		}
		f.stack.Stop()
		cancel()
	}
	for name, values := range samples {
		b.ReportMetric(testutil.Median(values), name)
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRealNode measures, per iteration on a new real-node stack: the stack's start (control
// plane, OLM and the node Ready), the OperatorHub install of the EFS operator from its catalog
// image (catalog READY; Subscription to CSV created; CSV created to the operator's pod Ready)
// and a ClusterCSIDriver to every operand the operator ships applied, to the driver's pods placed
// on the node, and to them Running there with every container Ready. Each iteration installs
// from both forms of the certified catalog, one stack each: the catalog a release publishes
// (bundle images, unpacked by OLM's Jobs; its metrics are prefixed "published-") and the
// offline one (bundles embedded; "offline-"). It reports the medians.
func BenchmarkRealNode(b *testing.B) {
	samples := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		for _, form := range []catalogForm{publishedCatalog, offlineCatalog} {
			add := func(name string, v float64) {
				samples[form.String()+"-"+name] = append(samples[form.String()+"-"+name], v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			begin := time.Now()
			s := testutil.StartTestBed(b, testbed.OLM, realNodeWithEveryTool(b))
			add("stack-up-s", time.Since(begin).Seconds())
			add("node-ready-s", s.Timings["node"].Seconds())
			pod, _, timings := installFromOperatorHub(ctx, b, s, form)
			for name, d := range map[string]string{
				"catalog image -> CatalogSource READY": "catalog-ready-s",
				"Subscription -> CSV created":          "sub-to-csv-s",
				"CSV created -> operator pod Ready":    "csv-to-operator-ready-s",
			} {
				add(d, timings[name].Seconds())
			}
			d := deployDriver(ctx, b, s, pod, createClusterCSIDriver(ctx, b, s.Client))
			add("cr-to-operands-applied-s", d.applied.Seconds())
			add("cr-to-driver-pods-placed-s", d.placed.Seconds())
			add("cr-to-driver-pods-running-s", d.running.Seconds())
			s.Stop()
			cancel()
		}
	}
	for name, values := range samples {
		b.ReportMetric(testutil.Median(values), name)
	}
}

// BenchmarkOLMv1 measures, per iteration on a new real-node stack, OLM v1 installing and
// upgrading the EFS operator from the catalog a release published: catalogd and
// operator-controller up, ClusterCatalog created to Serving, ClusterExtension created to the
// 4.10.0 operator's pod Ready, and its version bumped to the 4.11.0 operator's pod Ready. It
// reports the medians.
func BenchmarkOLMv1(b *testing.B) {
	samples := map[string][]float64{}
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		s := testutil.StartTestBed(b, testbed.OLM, realNodeWithEveryTool(b))
		p := publish(b, s)
		timings := olmv1Timings{}
		pod := installWithOLMv1(ctx, b, s, p, openshift.Minor{Major: 4, Minor: 10}, "4.10.0", timings)
		begin := time.Now()
		patchOLMv1Catalog(ctx, b, s, map[string]any{"version": "4.11.0"})
		waitForOLMv1Operator(ctx, b, s, p, pod.Namespace, "4.11.0")
		timings["version-bump-to-operator-ready-s"] = time.Since(begin)
		for name, d := range timings {
			samples[name] = append(samples[name], d.Seconds())
		}
		s.Stop()
		cancel()
	}
	for name, values := range samples {
		b.ReportMetric(testutil.Median(values), name)
	}
	b.ReportMetric(0, "ns/op")
}

// realNodeWithEveryTool asks for a real node with every test bed tool: the flows push images of
// the real sidecars and OLM's unpack tools, which a stack's own needs leave out.
func realNodeWithEveryTool(tb testing.TB) func(*testbed.Options) {
	tb.Helper()
	tools, err := testutil.TestBedTools()
	if err != nil {
		tb.Fatal(err)
	}
	return func(o *testbed.Options) { o.RealNode, o.Tools = true, tools }
}
