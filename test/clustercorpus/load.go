package clustercorpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// Load reads every case below dir, by name, with $NS standing for the namespace ns(name) gives.
func Load(dir string, ns func(name string) string) (map[string]*Case, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	cases := map[string]*Case{}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := LoadCase(filepath.Join(dir, e.Name(), "case.yaml"), ns(e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases[e.Name()] = c
	}
	return cases, errors.Join(errs...)
}

// LoadCase reads one case.yaml strictly and checks that it says what is wrong and what must be
// said.
func LoadCase(file, ns string) (*Case, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	raw = bytes.ReplaceAll(raw, []byte("$NS"), []byte(ns))
	var c Case
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if problems := c.problems(); len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	return &c, nil
}

// ShippedExample reads, from the newest bundle of package pkg below repoRoot/bundle, the example
// of kind the CSV ships: in its alm-examples or as its initialization-resource.
func ShippedExample(repoRoot, pkg, kind string) (map[string]any, error) {
	dir := filepath.Join(repoRoot, "bundle", pkg)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	newest := ""
	for _, e := range entries {
		if e.IsDir() && semver.IsValid("v"+e.Name()) && (newest == "" || semver.Compare("v"+e.Name(), "v"+newest) > 0) {
			newest = e.Name()
		}
	}
	csvs, err := filepath.Glob(filepath.Join(dir, newest, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(csvs) != 1 {
		return nil, fmt.Errorf("finding the CSV of %s %s: %d found (%v)", pkg, newest, len(csvs), err)
	}
	raw, err := os.ReadFile(csvs[0])
	if err != nil {
		return nil, err
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return nil, fmt.Errorf("%s: %w", csvs[0], err)
	}
	var examples []map[string]any
	if s := csv.Metadata.Annotations["alm-examples"]; s != "" {
		if err := json.Unmarshal([]byte(s), &examples); err != nil {
			return nil, fmt.Errorf("%s: alm-examples: %w", csvs[0], err)
		}
	}
	if s := csv.Metadata.Annotations["operatorframework.io/initialization-resource"]; s != "" {
		var init map[string]any
		if err := json.Unmarshal([]byte(s), &init); err != nil {
			return nil, fmt.Errorf("%s: initialization-resource: %w", csvs[0], err)
		}
		examples = append(examples, init)
	}
	for _, e := range examples {
		if e["kind"] == kind {
			return e, nil
		}
	}
	return nil, fmt.Errorf("%s ships no example of %s", csvs[0], kind)
}

// Namespace is the namespace of case name: a DNS label, unique per case.
func Namespace(prefix, name string) string {
	ns := prefix + name
	if len(ns) > 63 {
		sum := sha256.Sum256([]byte(name))
		ns = ns[:63-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return strings.TrimRight(ns, "-")
}
