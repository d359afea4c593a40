package testutil

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/internal/openshift"
)

// ServeCatalog runs `opm serve` on a catalog directory and returns a registry client for it. opm
// is the binary to run: the tools' opm, or the one a catalog image carries.
func ServeCatalog(t *testing.T, opm, dir string) api.RegistryClient {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(opm, "serve", dir, "-p", strconv.Itoa(port), "--cache-dir", t.TempDir(),
		"--cache-enforce-integrity=false", "--pprof-addr=", "-t", filepath.Join(t.TempDir(), "termination.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := api.NewRegistryClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = Eventually(ctx, "opm serve "+dir+" to answer", func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		// Any catalog answers ListPackages, whichever packages it holds.
		stream, err := client.ListPackages(ctx, &api.ListPackageRequest{})
		if err != nil {
			return err
		}
		if _, err := stream.Recv(); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// latest returns the newest release of an operator in a channel.
func latest(releases []definition.Release, channel string) definition.Release {
	var rs []definition.Release
	for _, r := range releases {
		for _, c := range r.Channels {
			if c == channel {
				rs = append(rs, r)
			}
		}
	}
	sort.Slice(rs, func(i, j int) bool { return semver.MustParse(rs[i].Version).LT(semver.MustParse(rs[j].Version)) })
	return rs[len(rs)-1]
}

// CheckServedCatalog asks a served catalog, minor m's index of a catalog, over operator-registry's
// gRPC registry API, for its packages and channel heads, and compares them with the operator
// definitions' releases for that minor, as OLM would ask.
func CheckServedCatalog(t *testing.T, client api.RegistryClient, catalog definition.Catalog, m openshift.Minor, operators []definition.Operator) {
	t.Helper()
	ctx := context.Background()
	stream, err := client.ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		served[p.Name] = true
	}
	packages := map[string]bool{}
	for _, o := range operators {
		releases := o.ReleasesIn(m)
		if o.Catalog != catalog || len(releases) == 0 {
			continue
		}
		packages[o.Package] = true
		if !served[o.Package] {
			t.Errorf("%s: package %s is not served", catalog, o.Package)
			continue
		}
		pkg, err := client.GetPackage(ctx, &api.GetPackageRequest{Name: o.Package})
		if err != nil {
			t.Fatal(err)
		}
		if pkg.DefaultChannelName != o.DefaultChannel {
			t.Errorf("%s/%s: default channel %q, want %q", catalog, o.Package, pkg.DefaultChannelName, o.DefaultChannel)
		}
		for _, ch := range pkg.Channels {
			want := latest(releases, ch.Name)
			if ch.CsvName != o.CSVName(want.Version) {
				t.Errorf("%s/%s channel %s: head %s, want %s", catalog, o.Package, ch.Name, ch.CsvName, o.CSVName(want.Version))
			}
			head, err := client.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: o.Package, ChannelName: ch.Name})
			if err != nil {
				t.Fatal(err)
			}
			if head.CsvName != ch.CsvName || head.Version != want.Version || head.SkipRange != want.SkipRange {
				t.Errorf("%s/%s channel %s: head bundle %s v%s skipRange %q, want v%s skipRange %q",
					catalog, o.Package, ch.Name, head.CsvName, head.Version, head.SkipRange, want.Version, want.SkipRange)
			}
			if want.Replaces == "" {
				continue
			}
			// What OLM asks when an installed CSV looks for its upgrade.
			next, err := client.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{CsvName: want.Replaces, PkgName: o.Package, ChannelName: ch.Name})
			if err != nil || next.CsvName != ch.CsvName {
				t.Errorf("%s/%s channel %s: the bundle that replaces %s is %v (%v), want %s", catalog, o.Package, ch.Name, want.Replaces, next.GetCsvName(), err, ch.CsvName)
			}
		}
		if served := len(pkg.Channels); served == 0 {
			t.Errorf("%s/%s: no channels", catalog, o.Package)
		}
	}
	if len(served) != len(packages) {
		t.Errorf("%s %s serves %v, want %v", catalog, m.Index(), slices.Sorted(maps.Keys(served)), slices.Sorted(maps.Keys(packages)))
	}
}
