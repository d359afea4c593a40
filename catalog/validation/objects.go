package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/property"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// BundleSource is a tree of bundle directories, <package>/<version>/manifests/.
type BundleSource struct {
	FS fs.FS
	// Dir names the tree in problems.
	Dir string
}

// embeddedObjects checks that the manifests embedded in offline bundles (olm.bundle.object) are
// exactly those of the bundle directories they were rendered from.
func (idx *catalogIndex) embeddedObjects(src *BundleSource) []Problem {
	var problems []Problem
	for _, p := range idx.m.Packages() {
		pkg := p.Name
		for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
			info := p.Bundles[name]
			embedded, err := embeddedManifests(info.Decl.Properties)
			if err != nil || len(embedded) == 0 || info.Version == nil {
				continue // nothing embedded (a published bundle), or reported by opm's rules
			}
			add := func(format string, args ...any) {
				problems = append(problems, Problem{File: idx.c.file("olm.bundle", pkg, name), Level: Error, Rule: RuleBundleObjects, Package: pkg, Bundle: name, Message: fmt.Sprintf(format, args...)})
			}
			dir := path.Join(pkg, info.Version.String(), "manifests")
			onDisk, err := dirManifests(src.FS, dir)
			if err != nil {
				add("cannot compare embedded objects with %s/%s: %v", src.Dir, dir, err)
				continue
			}
			for _, key := range unionKeys(embedded, onDisk) {
				switch e, d := embedded[key], onDisk[key]; {
				case d == nil:
					add("embeds %s, which %s/%s does not have", key, src.Dir, dir)
				case e == nil:
					add("does not embed %s from %s/%s", key, src.Dir, dir)
				case !reflect.DeepEqual(e, d):
					add("embeds a %s that differs from %s/%s: regenerate the catalog", key, src.Dir, dir)
				}
			}
		}
	}
	return problems
}

// manifestKey names an object by kind and name.
func manifestKey(obj map[string]any) string {
	name := ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	kind, _ := obj["kind"].(string)
	return kind + "/" + name
}

func embeddedManifests(props []property.Property) (map[string]map[string]any, error) {
	objs := map[string]map[string]any{}
	for _, p := range props {
		if p.Type != property.TypeBundleObject {
			continue
		}
		var bo property.BundleObject
		if err := json.Unmarshal(p.Value, &bo); err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := json.Unmarshal(bo.Data, &obj); err != nil {
			return nil, err
		}
		objs[manifestKey(obj)] = obj
	}
	return objs, nil
}

func dirManifests(fsys fs.FS, dir string) (map[string]map[string]any, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	objs := map[string]map[string]any{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		raw, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			if obj != nil {
				objs[manifestKey(obj)] = obj
			}
		}
	}
	return objs, nil
}

func unionKeys(a, b map[string]map[string]any) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
