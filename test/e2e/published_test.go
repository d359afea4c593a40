package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/sirupsen/logrus"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/release"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// publishedRegistry is the repository prefix the flows' release publishes under: a real
// registry's name, which the stack's registry serves, as a release to quay.io would read.
const publishedRegistry = "quay.io/csi-olm"

// published is a release `csi-olm release` made into the stack's registry: the catalog images
// it pushed, which point at bundle images by digest, and its output directory. The real-node
// flows install from it as a cluster installs what a release publishes.
type published struct {
	dir string
	// catalogs are the pushed catalog images by catalog name and OpenShift minor, read from the
	// release's catalogs.txt: what the flows' CatalogSources and ClusterCatalogs name.
	catalogs map[definition.Catalog]map[openshift.Minor]string
}

// clusterMinor is the OpenShift minor the flows' clusters run: the newest the catalogs are
// built for.
var clusterMinor = func() openshift.Minor {
	m, ok := definition.NewestMinor(drivers.All())
	if !ok {
		panic("no operator definition names an OpenShift minor")
	}
	return m
}()

// catalog is the image of a catalog for the minor the flows' clusters run.
func (p *published) catalog(tb testing.TB, name definition.Catalog) string {
	tb.Helper()
	return p.catalogAt(tb, name, clusterMinor)
}

// catalogAt is the image of a catalog for minor m.
func (p *published) catalogAt(tb testing.TB, name definition.Catalog, m openshift.Minor) string {
	tb.Helper()
	ref := p.catalogs[name][m]
	if ref == "" {
		tb.Fatalf("the release published no %s catalog for %s", name, m.Index())
	}
	return ref
}

var publishedOn = struct {
	sync.Mutex
	releases map[string]*published // by the registry's storage directory
}{releases: map[string]*published{}}

// publish runs a whole release into the stack's registry, once per registry: the real nodes of a
// run, one after another, share one (realNodeOptions). Every image a release
// pins must exist for every platform its operator declares, so first it pushes them: what the
// node runs (the tree's operator for every EFS release, the driver's and sidecars' runnable
// stand-ins, the community operator's stand-in) as the amd64 image of an index whose other
// platforms are stand-ins, and a stand-in index for each image nothing here runs.
func publish(tb testing.TB, s *testbed.Stack) *published {
	tb.Helper()
	publishedOn.Lock()
	defer publishedOn.Unlock()
	if p := publishedOn.releases[s.RegistryStorage()]; p != nil {
		return p
	}
	ctx := context.Background()
	operators := drivers.All()
	head, err := release.HeadOperatorImage(operators)
	if err != nil {
		tb.Fatal(err)
	}
	// The node runs the amd64 operator. The arm64 one is packed but never run here, so a small
	// arm64 program stands in for it, as in TestRelease: a release reads only a binary's
	// platform. Cross-compiling the operator took minutes at the head of the real-node flows;
	// test/layout shows its code is the same on every platform a release ships.
	binaries := []string{
		testutil.BuildStatic(tb, "github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator", "amd64"),
		testutil.BuildStatic(tb, "github.com/csi-olm/csi-olm/test/e2e/netprobe", "arm64"),
	}
	pushEFSReleases(tb, s, operators, head, binaries)
	community := communityOperator(tb)
	pushStandIn(tb, s, community.Image, community.Command...)
	for _, ref := range fixture.CommunityDriverImages {
		pushStandIn(tb, s, ref)
	}
	// The OLM-era EBS operator runs on the node too, as the second operator OLM v1 takes over
	// (TestOLMv0ToOLMv1OnRealNode): a stand-in of its image, which is not built here.
	pushStandIn(tb, s, ebsOperatorImage)
	c := s.RegistryClient()
	for _, w := range release.Wants(operators) {
		if w.Ref != head {
			completePlatforms(tb, c, w)
		}
	}
	// Not the test's TempDir: later tests read the release it publishes for them too.
	dir, err := os.MkdirTemp(runDir, "release-")
	if err != nil {
		tb.Fatal(err)
	}
	r := &release.Release{
		Operators: operators, Registry: publishedRegistry,
		OperatorBinaries: binaries,
		// csi-olm for the node's platform: its image is what pipelines run (TestCLIImageOnRealNode).
		CLIBinaries: []string{testutil.BuildStatic(tb, "github.com/csi-olm/csi-olm/cmd/csi-olm", "amd64")},
		Version:     "e2e", Revision: "e2e", OPM: s.Tools().Opm, GRPCHealthProbe: s.Tools().GRPCHealthProbe,
		Client: c, OutputDir: filepath.Join(dir, "release"), Out: testWriter{tb},
	}
	if err := r.Run(ctx); err != nil {
		tb.Fatalf("csi-olm release: %v", err)
	}
	p := &published{dir: r.OutputDir, catalogs: readCatalogsFile(tb, filepath.Join(r.OutputDir, release.CatalogsFile))}
	publishedOn.releases[s.RegistryStorage()] = p
	return p
}

// pushEFSReleases pushes what every EFS release runs: the tree's operator under each release's
// operator image but the newest, which the release builds itself (no older source is built
// here, and an upgrade's first step must run), and each release's driver and sidecars, from its
// own tags (an upgrade runs two).
func pushEFSReleases(tb testing.TB, s *testbed.Stack, operators []definition.Operator, head string, binaries []string) {
	tb.Helper()
	var raw [][]byte
	for _, path := range binaries {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		raw = append(raw, b)
	}
	for _, o := range operators {
		if o.CSVPrefix != efs.OperatorName {
			continue
		}
		for _, rel := range o.Releases {
			csv := filepath.Join("..", "..", "bundle", o.Package, rel.Version, "manifests", o.CSVName(rel.Version)+".clusterserviceversion.yaml")
			pushDriverImages(tb, s, csvDeployment(tb, csv).Spec.Template.Spec.Containers[0])
			if rel.OperatorImage == head {
				continue
			}
			idx, err := images.OperatorIndex(raw, nil, rel.Version, "e2e")
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := s.RegistryClient().Push(context.Background(), rel.OperatorImage, idx); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// completePlatforms makes w's image an index with an image for every platform w wants: an
// image already pushed becomes the index's image for its own platform, and each missing
// platform gets a stand-in holding one file that names it.
func completePlatforms(tb testing.TB, c *registry.Client, w registry.Want) {
	tb.Helper()
	ctx := context.Background()
	loc, err := c.Location(w.Ref)
	if err != nil {
		tb.Fatal(err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var have []v1.Platform
	desc, err := remote.Get(loc, remote.WithContext(ctx))
	switch {
	case err != nil:
		// Not pushed: nothing here runs it.
	case desc.MediaType.IsIndex():
		return
	default:
		img, err := desc.Image()
		if err != nil {
			tb.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			tb.Fatal(err)
		}
		p := cfg.Platform()
		have = append(have, *p)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	for _, p := range w.Platforms {
		if slices.ContainsFunc(have, p.Equals) {
			continue
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: testutil.StandInImage(tb, w.Ref, p), Descriptor: v1.Descriptor{Platform: &p}})
	}
	if _, err := c.Push(ctx, w.Ref, idx); err != nil {
		tb.Fatal(err)
	}
}

// readCatalogsFile reads a release's catalogs.txt: one "<catalog> <minor> <image@digest>" line
// per catalog image.
func readCatalogsFile(tb testing.TB, path string) map[definition.Catalog]map[openshift.Minor]string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	out := map[definition.Catalog]map[openshift.Minor]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || !strings.Contains(fields[2], "@sha256:") {
			tb.Fatalf("%s: line %q is not '<catalog> <minor> <image@digest>'", path, sc.Text())
		}
		m, err := openshift.ParseMinor(fields[1])
		if err != nil {
			tb.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		name := definition.Catalog(fields[0])
		if out[name] == nil {
			out[name] = map[openshift.Minor]string{}
		}
		out[name][m] = fields[2]
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	for want, minors := range definition.CatalogMinors(drivers.All()) {
		for _, m := range minors {
			if out[want][m] == "" {
				tb.Fatalf("%s names no %s catalog for %s", path, want, m.Index())
			}
		}
	}
	return out
}

// csvFile is the published CSV of a package's version.
func (p *published) csvFile(pkg, version string) string {
	matches, _ := filepath.Glob(filepath.Join(p.dir, "bundle", pkg, version, "manifests", "*.clusterserviceversion.yaml"))
	if len(matches) != 1 {
		return filepath.Join(p.dir, "bundle", pkg, version, "manifests", "<no single CSV>")
	}
	return matches[0]
}

// operator is the operator Deployment of the published head EFS CSV: what OLM must run.
func (p *published) operator(tb testing.TB) operatorsv1alpha1.StrategyDeploymentSpec {
	tb.Helper()
	return csvDeployment(tb, p.csvFile(efsPackage, strings.TrimPrefix(certifiedHeadCSV, "aws-efs-csi-driver-operator.v")))
}

func init() {
	// operator-registry's bundle parser, which the release runs, logs every optional file it
	// does not find.
	logrus.SetLevel(logrus.WarnLevel)
}

// testWriter writes a verb's output to the test's log.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
