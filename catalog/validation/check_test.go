package validation_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/csi-olm/csi-olm/catalog/validation"
)

// demo is a valid catalog: one package, three bundles, a replaces chain with a skipRange.
const demo = `---
schema: olm.package
name: demo
defaultChannel: stable
---
schema: olm.channel
package: demo
name: stable
entries:
  - name: demo.v1.0.0
  - name: demo.v1.1.0
    replaces: demo.v1.0.0
  - name: demo.v1.2.0
    replaces: demo.v1.1.0
    skipRange: ">=1.0.0 <1.2.0"
` + bundles

const bundles = `---
schema: olm.bundle
package: demo
name: demo.v1.0.0
image: quay.io/demo/bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.0.0}
---
schema: olm.bundle
package: demo
name: demo.v1.1.0
image: quay.io/demo/bundle:v1.1.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.1.0}
---
schema: olm.bundle
package: demo
name: demo.v1.2.0
image: quay.io/demo/bundle:v1.2.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.2.0}
`

// community is a community catalog of package demo, which `demo` upgrades.
const community = `---
schema: olm.package
name: demo
defaultChannel: stable
---
schema: olm.channel
package: demo
name: stable
entries:
  - name: old-demo.v0.1.0
  - name: old-demo.v0.2.0
    replaces: old-demo.v0.1.0
---
schema: olm.bundle
package: demo
name: old-demo.v0.1.0
image: quay.io/old/bundle:v0.1.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 0.1.0}
---
schema: olm.bundle
package: demo
name: old-demo.v0.2.0
image: quay.io/old/bundle:v0.2.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 0.2.0}
`

func load(t *testing.T, files map[string]string) (*validation.Catalog, []validation.Problem) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return validation.Load(context.Background(), fsys, "cat")
}

func TestValidCatalogHasNoProblems(t *testing.T) {
	c, problems := load(t, map[string]string{"demo/catalog.yaml": demo})
	problems = append(problems, validation.Check(c, validation.Options{})...)
	if len(problems) > 0 {
		t.Fatalf("problems in a valid catalog:\n%s", list(problems))
	}
}

func list(problems []validation.Problem) string {
	var lines []string
	for _, p := range problems {
		lines = append(lines, "  "+p.String())
	}
	return strings.Join(lines, "\n")
}

type want struct {
	level    validation.Level
	file     string
	contains string
}

func TestBadCatalogs(t *testing.T) {
	replace := func(old, new string) func(string) string {
		return func(s string) string {
			if !strings.Contains(s, old) {
				panic("fixture lacks " + old)
			}
			return strings.Replace(s, old, new, 1)
		}
	}
	tests := []struct {
		name      string
		edit      func(string) string
		extra     map[string]string
		community string
		want      []want
	}{
		{
			name: "stranded bundle",
			edit: replace("  - name: demo.v1.0.0\n", "  - name: demo.v0.9.0\n  - name: demo.v1.0.0\n"),
			extra: map[string]string{"demo/old.yaml": `schema: olm.bundle
package: demo
name: demo.v0.9.0
image: quay.io/demo/bundle:v0.9.0
properties: [{type: olm.package, value: {packageName: demo, version: 0.9.0}}]
`},
			want: []want{
				{validation.Error, "demo/catalog.yaml", "multiple channel heads found in graph: demo.v0.9.0, demo.v1.2.0"},
				{validation.Error, "demo/catalog.yaml", "channel must have exactly one head, has 2"},
			},
		},
		{
			name: "two heads",
			edit: replace("    replaces: demo.v1.1.0\n", ""),
			want: []want{{validation.Error, "demo/catalog.yaml", "channel must have exactly one head, has 2: [demo.v1.1.0 demo.v1.2.0]"}},
		},
		{
			name: "head listed twice",
			edit: replace("    skipRange: \">=1.0.0 <1.2.0\"\n", "    skipRange: \">=1.0.0 <1.2.0\"\n  - name: demo.v1.2.0\n    replaces: demo.v1.1.0\n"),
			want: []want{
				{validation.Error, "demo/catalog.yaml", `duplicate entry "demo.v1.2.0"`},
				{validation.Error, "demo/catalog.yaml", "channel must have exactly one head, has 2: [demo.v1.2.0 demo.v1.2.0]"},
			},
		},
		{
			name: "cycle",
			edit: replace("  - name: demo.v1.0.0\n", "  - name: demo.v1.0.0\n    replaces: demo.v1.2.0\n"),
			want: []want{
				{validation.Error, "demo/catalog.yaml", "no channel head found in graph"},
				{validation.Error, "demo/catalog.yaml", `default channel "stable" has no single head`},
			},
		},
		{
			name: "bad skipRange",
			edit: replace(`skipRange: ">=1.0.0 <1.2.0"`, `skipRange: ">=1.0 <<1.2"`),
			want: []want{
				{validation.Error, "demo/catalog.yaml", `bundle demo.v1.2.0: skipRange ">=1.0 <<1.2" does not parse`},
				{validation.Error, "demo/catalog.yaml", "invalid skipRange"},
			},
		},
		{
			name: "missing default channel",
			edit: replace("defaultChannel: stable", "defaultChannel: fast"),
			want: []want{
				{validation.Error, "demo/catalog.yaml", `default channel "fast" does not exist`},
				{validation.Error, "demo/catalog.yaml", `invalid channel "fast"`},
			},
		},
		{
			name:  "package with no bundles",
			extra: map[string]string{"empty/catalog.yaml": "schema: olm.package\nname: empty\ndefaultChannel: stable\n"},
			want: []want{
				{validation.Error, "empty/catalog.yaml", "channel must contain at least one bundle"},
				{validation.Error, "empty/catalog.yaml", `default channel "stable" does not exist`},
			},
		},
		{
			name:  "duplicate bundle",
			extra: map[string]string{"demo/dup.yaml": bundles[:strings.Index(bundles[4:], "---")+4]},
			want:  []want{{validation.Error, "demo/", `duplicate bundle "demo.v1.0.0"`}},
		},
		{
			name:  "malformed YAML, with its line",
			extra: map[string]string{"broken/catalog.yaml": "schema: olm.package\nname: broken\n  defaultChannel: [stable\n"},
			want:  []want{{validation.Error, "broken/catalog.yaml", "line 3"}},
		},
		{
			name:  "object without schema",
			extra: map[string]string{"demo/extra.yaml": "name: orphan\npackage: demo\n"},
			want:  []want{{validation.Error, "demo/extra.yaml", "missing root schema field"}},
		},
		{
			name: "deprecation pointing nowhere",
			extra: map[string]string{"demo/deprecations.yaml": `schema: olm.deprecations
package: demo
entries:
  - reference: {schema: olm.bundle, name: demo.v0.0.1}
    message: gone
  - reference: {schema: olm.channel, name: beta}
    message: gone
  - reference: {schema: olm.package}
`},
			want: []want{
				{validation.Error, "demo/deprecations.yaml", `deprecates bundle "demo.v0.0.1", which package demo does not have`},
				{validation.Error, "demo/deprecations.yaml", `deprecates channel "beta", which package demo does not have`},
				{validation.Error, "demo/deprecations.yaml", "has no message for users"},
			},
		},
		{
			name:  "deprecation of a missing package",
			extra: map[string]string{"ghost/deprecations.yaml": "schema: olm.deprecations\npackage: ghost\nentries: [{reference: {schema: olm.package}, message: bye}]\n"},
			want: []want{
				{validation.Error, "ghost/deprecations.yaml", `deprecates package "ghost", which is not in this catalog`},
				{validation.Error, "ghost/deprecations.yaml", `cannot apply deprecations to an unknown package "ghost"`},
			},
		},
		{
			name: "replaces pointing nowhere",
			edit: replace("    replaces: demo.v1.0.0\n", "    replaces: demo.v1.0.0\n    skips: [demo.v0.5.0]\n"),
			want: []want{{validation.Warning, "demo/catalog.yaml", `bundle demo.v1.1.0: upgrades from "demo.v0.5.0", which is not in this catalog: installs of it from an earlier catalog still upgrade (a pruned tail)`}},
		},
		{
			name:      "replaces pointing nowhere, across catalogs",
			edit:      replace("  - name: demo.v1.0.0\n", "  - name: demo.v1.0.0\n    replaces: old-demo.v0.0.9\n    skipRange: \">=0.1.0 <1.0.0\"\n"),
			community: community,
			want:      []want{{validation.Error, "demo/catalog.yaml", `upgrades from "old-demo.v0.0.9", which is no bundle of package demo here or in the community catalog`}},
		},
		{
			name:      "certified head older than the community head",
			edit:      func(s string) string { return s },
			community: strings.ReplaceAll(strings.ReplaceAll(community, "0.2.0", "2.0.0"), "0.1.0", "1.9.0"),
			want: []want{
				{validation.Error, "demo/catalog.yaml", "head version 1.2.0 is not newer than the community head old-demo.v2.0.0 (2.0.0)"},
				{validation.Error, "demo/catalog.yaml", "has no edge from community bundle old-demo.v1.9.0"},
			},
		},
		{
			name:      "certified head without an edge from a community version",
			edit:      replace(`skipRange: ">=1.0.0 <1.2.0"`, `skipRange: ">=0.2.0 <1.2.0"`),
			community: community,
			want:      []want{{validation.Error, "demo/catalog.yaml", "bundle demo.v1.2.0: has no edge from community bundle old-demo.v0.1.0"}},
		},
		{
			name:      "community channel missing here",
			edit:      func(s string) string { return strings.ReplaceAll(s, "stable", "fast") },
			community: community,
			want:      []want{{validation.Error, "demo/catalog.yaml", "channel stable: the community catalog has this channel but this catalog does not"}},
		},
		{
			name: "bundles that skip each other, out of reach of the head",
			edit: replace("  - name: demo.v1.0.0\n", "  - name: demo.v1.0.0\n  - name: demo.v0.8.0\n    skips: [demo.v0.9.0]\n  - name: demo.v0.9.0\n    skips: [demo.v0.8.0]\n"),
			extra: map[string]string{"demo/old.yaml": `schema: olm.bundle
package: demo
name: demo.v0.8.0
image: quay.io/demo/bundle:v0.8.0
properties: [{type: olm.package, value: {packageName: demo, version: 0.8.0}}]
---
schema: olm.bundle
package: demo
name: demo.v0.9.0
image: quay.io/demo/bundle:v0.9.0
properties: [{type: olm.package, value: {packageName: demo, version: 0.9.0}}]
`},
			want: []want{
				{validation.Error, "demo/catalog.yaml", "bundle demo.v0.8.0: no upgrade path leads from it to the channel head demo.v1.2.0"},
				{validation.Error, "demo/catalog.yaml", "bundle demo.v0.9.0: no upgrade path leads from it to the channel head demo.v1.2.0"},
			},
		},
		{
			// opm accepts it: every bundle is on the replaces chain from the head or skipped.
			name: "a release skipped by the next, which the only upgrade from an older one goes to",
			edit: replace("    replaces: demo.v1.0.0\n  - name: demo.v1.2.0\n    replaces: demo.v1.1.0\n    skipRange: \">=1.0.0 <1.2.0\"\n",
				"    replaces: demo.v1.0.0\n    skips: [demo.v1.0.0]\n  - name: demo.v1.2.0\n    replaces: demo.v1.1.0\n    skips: [demo.v1.1.0]\n"),
			want: []want{{validation.Warning, "demo/catalog.yaml", "bundle demo.v1.0.0: every upgrade path from it to the channel head demo.v1.2.0 goes through a bundle that another bundle skips"}},
		},
		{
			name: "channel entry without a bundle",
			edit: replace("    skipRange: \">=1.0.0 <1.2.0\"\n", "    skipRange: \">=1.0.0 <1.2.0\"\n  - name: demo.v1.3.0\n    replaces: demo.v1.2.0\n"),
			want: []want{{validation.Error, "demo/catalog.yaml", `no olm.bundle blobs found in package "demo" for olm.channel entries [demo.v1.3.0]`}},
		},
		{
			name: "bundle without its package property",
			edit: replace("properties:\n  - type: olm.package\n    value: {packageName: demo, version: 1.0.0}\n", "properties: []\n"),
			want: []want{{validation.Error, "demo/catalog.yaml", `bundle "demo.v1.0.0" must have exactly 1 "olm.package" property, found 0`}},
		},
		{
			name: "two bundles with one version",
			edit: replace("version: 1.1.0}", "version: 1.0.0}"),
			want: []want{{validation.Error, "demo/catalog.yaml", "duplicate versions found in bundles"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := demo
			if tt.edit != nil {
				content = tt.edit(demo)
			}
			files := map[string]string{"demo/catalog.yaml": content}
			for name, extra := range tt.extra {
				files[name] = extra
			}
			c, problems := load(t, files)
			opts := validation.Options{}
			if tt.community != "" {
				opts.Community, _ = validation.Load(context.Background(), fstest.MapFS{"demo/catalog.yaml": {Data: []byte(tt.community)}}, "community")
			}
			problems = append(problems, validation.Check(c, opts)...)
			for _, w := range tt.want {
				found := false
				for _, p := range problems {
					inFile := p.File == "cat" && w.file == "cat" || strings.HasPrefix(p.File, "cat/"+w.file) && w.file != "cat"
					found = found || (inFile && p.Level == w.level && strings.Contains(p.String(), w.contains))
				}
				if !found {
					t.Errorf("no %s in %s mentioning %q; got:\n%s", w.level, w.file, w.contains, list(problems))
				}
			}
		})
	}
}

// TestEmbeddedObjectsMatchBundleDirectories checks the committed offline catalogs against the
// committed bundles, then breaks one manifest and expects the difference to be named.
func TestEmbeddedObjectsMatchBundleDirectories(t *testing.T) {
	ctx := context.Background()
	bundles := fstest.MapFS{}
	root := os.DirFS("../../bundle")
	for _, dir := range []string{"aws-efs-operator/4.9.0", "aws-efs-operator/4.10.0", "aws-efs-operator/4.11.0", "aws-ebs-csi-driver-operator/4.5.0", "manila-csi-driver-operator/4.5.0"} {
		entries, err := fsReadDir(root, dir+"/manifests")
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range entries {
			bundles[dir+"/manifests/"+name] = &fstest.MapFile{Data: data}
		}
	}
	src := &validation.BundleSource{FS: bundles, Dir: "bundle"}
	load := func(minor string) *validation.Catalog {
		c, problems := validation.Load(ctx, os.DirFS("../certified/"+minor), "certified/"+minor)
		problems = append(problems, validation.Check(c, validation.Options{Bundles: src})...)
		for _, p := range problems {
			if p.Rule == validation.RuleBundleObjects || p.Level == validation.Error {
				t.Errorf("committed catalog disagrees with the committed bundles: %s", p)
			}
		}
		return c
	}
	for _, minor := range []string{"v4.5", "v4.9", "v4.10"} {
		load(minor)
	}
	efs, ebs := load("v4.11"), load("v4.5")
	csv := "aws-efs-operator/4.11.0/manifests/aws-efs-csi-driver-operator.v4.11.0.clusterserviceversion.yaml"
	bundles[csv].Data = []byte(strings.Replace(string(bundles[csv].Data), "minKubeVersion: 1.24.0", "minKubeVersion: 1.25.0", 1))
	delete(bundles, "manila-csi-driver-operator/4.5.0/manifests/csi.openshift.io_maniladrivers.yaml")
	problems := append(validation.Check(efs, validation.Options{Bundles: src}), validation.Check(ebs, validation.Options{Bundles: src})...)
	for _, w := range []string{
		"bundle aws-efs-csi-driver-operator.v4.11.0: embeds a ClusterServiceVersion/aws-efs-csi-driver-operator.v4.11.0 that differs from bundle/aws-efs-operator/4.11.0/manifests",
		"bundle manila-csi-driver-operator.v4.5.0: embeds CustomResourceDefinition/maniladrivers.csi.openshift.io, which bundle/manila-csi-driver-operator/4.5.0/manifests does not have",
	} {
		if !strings.Contains(list(problems), w) {
			t.Errorf("no problem %q; got:\n%s", w, list(problems))
		}
	}
}

func fsReadDir(fsys fs.FS, dir string) (map[string][]byte, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = fs.ReadFile(fsys, dir+"/"+e.Name()); err != nil {
			return nil, err
		}
	}
	return files, nil
}
