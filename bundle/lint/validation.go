// Package validation checks registry+v1 bundle directories with operator-framework/api's
// validators, plus the checks csi-olm adds, and says which file every problem comes from.
//
// With Options.OLMv1 (`csi-olm bundle validate --olm v1`) it also checks that OLM v1,
// operator-controller v1.11.0, can install each bundle: OLMv1 restates the rules that
// operator-controller enforces when it resolves a registry+v1 bundle and converts it into the
// objects it applies (AllNamespaces install mode, no dependencies, no owned API services, the
// kinds it installs from manifests/, its webhook and CRD rules...). OLMv1Rules lists them, each
// with a stable ID (olmv1/...), which every finding carries as its Validator, and the file and
// function of operator-controller it follows.
package lint

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	validationerrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
)

// Level is the severity of a problem.
type Level string

const (
	// Error makes a bundle unusable or unpublishable.
	Error Level = "error"
	// Warning should be fixed or explained.
	Warning Level = "warning"
)

// Problem is one finding about a bundle.
type Problem struct {
	// File is the file the problem comes from (the bundle directory when no single file is to blame).
	File      string `json:"file"`
	Level     Level  `json:"level"`
	Validator string `json:"validator"`
	Message   string `json:"message"`
	// Explained holds the reason a warning is expected; such a warning does not count.
	Explained string `json:"explained,omitempty"`
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s: %s: [%s] %s", p.File, p.Level, p.Validator, p.Message)
	if p.Explained != "" {
		s += " (explained: " + p.Explained + ")"
	}
	return s
}

// Explainer returns why a warning about a CSV is expected, or "" when it is not.
type Explainer func(csvName, warning string) string

// The validators every bundle must pass: OLM's defaults, OperatorHub's and the good practices.
var validators = []struct {
	name string
	v    interfaces.Validator
}{
	{"ClusterServiceVersion", apivalidation.ClusterServiceVersionValidator},
	{"CustomResourceDefinition", apivalidation.CustomResourceDefinitionValidator},
	{"Bundle", apivalidation.BundleValidator},
	{"OperatorHub", apivalidation.OperatorHubV2Validator},
	{"StandardCapabilities", apivalidation.StandardCapabilitiesValidator},
	{"StandardCategories", apivalidation.StandardCategoriesValidator},
	{"GoodPractices", apivalidation.GoodPracticesValidator},
}

// Options say how strictly a bundle is checked.
type Options struct {
	// Explain says why a warning is expected; nil explains none.
	Explain Explainer
	// Release demands what a released bundle must carry: every image pinned by digest. The
	// bundles committed for development reference release tags instead.
	Release bool
	// OLMv1 adds the checks of what OLM v1 can install (see OLMv1).
	OLMv1 bool
}

// Bundle validates one bundle directory and returns every problem found.
func Bundle(dir string, opts Options) []Problem {
	problems := checkBundle(dir, opts)
	if opts.OLMv1 {
		problems = append(problems, OLMv1(dir)...)
	}
	return problems
}

// checkBundle runs the validators every bundle must pass.
func checkBundle(dir string, opts Options) []Problem {
	files, problems := indexManifests(dir)
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return append(problems, Problem{File: dir, Level: Error, Validator: "Load", Message: fmt.Sprintf("cannot load the bundle: %v", err)})
	}
	if b.CSV == nil {
		return append(problems, Problem{File: dir, Level: Error, Validator: "Load", Message: "the bundle has no ClusterServiceVersion"})
	}
	csvFile := files.lookup("ClusterServiceVersion", b.CSV.Name, dir)
	objs := b.ObjectsToValidate()
	for _, val := range validators {
		for _, result := range val.v.Validate(objs...) {
			file := files.lookupName(result.Name, csvFile)
			for _, e := range append(result.Errors, result.Warnings...) {
				p := Problem{File: file, Level: levelOf(e), Validator: val.name, Message: message(e)}
				if p.Level == Warning && opts.Explain != nil {
					p.Explained = opts.Explain(b.CSV.Name, p.Message)
				}
				problems = append(problems, p)
			}
		}
	}
	for _, msg := range csvProblems(b.CSV, opts.Release) {
		problems = append(problems, Problem{File: csvFile, Level: Error, Validator: "csi-olm", Message: msg})
	}
	problems = append(problems, labelProblems(dir)...)
	return problems
}

func levelOf(e validationerrors.Error) Level {
	if e.Level == validationerrors.LevelError {
		return Error
	}
	return Warning
}

func message(e validationerrors.Error) string {
	msg := e.Detail
	if e.Field != "" {
		msg = fmt.Sprintf("%s: %s", e.Field, msg)
	}
	if msg == "" {
		msg = e.Error()
	}
	return msg
}

// csvProblems are csi-olm's own rules for a CSV: images named by a release tag or, in a release,
// pinned by digest; handed to the operator only if mirrored; and no wildcard permissions.
func csvProblems(csv *v1alpha1.ClusterServiceVersion, release bool) []string {
	var problems []string
	related := map[string]bool{}
	for _, img := range csv.Spec.RelatedImages {
		related[img.Image] = true
		if problem := definition.ImageProblem(img.Image, release); problem != "" {
			problems = append(problems, fmt.Sprintf("spec.relatedImages %q: image %s", img.Name, problem))
		}
	}
	strategy := csv.Spec.InstallStrategy.StrategySpec
	for _, dep := range strategy.DeploymentSpecs {
		for _, c := range dep.Spec.Template.Spec.Containers {
			if !related[c.Image] {
				problems = append(problems, fmt.Sprintf("deployment %q container %q: image %q is not in spec.relatedImages, so it would not be mirrored for disconnected clusters", dep.Name, c.Name, c.Image))
			}
			for _, env := range c.Env {
				if strings.HasSuffix(env.Name, "_IMAGE") && env.Value != "" && !related[env.Value] {
					problems = append(problems, fmt.Sprintf("deployment %q container %q: env %s image %q is not in spec.relatedImages", dep.Name, c.Name, env.Name, env.Value))
				}
			}
		}
	}
	for _, perms := range []struct {
		field string
		list  []v1alpha1.StrategyDeploymentPermissions
	}{{"clusterPermissions", strategy.ClusterPermissions}, {"permissions", strategy.Permissions}} {
		for _, p := range perms.list {
			problems = append(problems, definition.WildcardProblems(fmt.Sprintf("%s[%s]", perms.field, p.ServiceAccountName), p.Rules)...)
		}
	}
	return problems
}

// labelProblems checks that bundle.Dockerfile labels the image with exactly the annotations of
// metadata/annotations.yaml: OLM reads the labels from images and the file from directories.
func labelProblems(dir string) []Problem {
	annotationsPath := filepath.Join(dir, registryv1.AnnotationsFile)
	dockerfilePath := filepath.Join(dir, registryv1.DockerfileFile)
	raw, err := os.ReadFile(annotationsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return []Problem{{File: annotationsPath, Level: Error, Validator: "csi-olm",
			Message: "missing: without it OLM knows neither the bundle's package nor its channels (`csi-olm bundle generate` writes it)"}}
	}
	if err != nil {
		return []Problem{{File: annotationsPath, Level: Error, Validator: "csi-olm", Message: err.Error()}}
	}
	var file struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		return []Problem{{File: annotationsPath, Level: Error, Validator: "csi-olm", Message: fmt.Sprintf("not valid YAML: %v", err)}}
	}
	df, err := os.Open(dockerfilePath)
	if err != nil {
		return []Problem{{File: dockerfilePath, Level: Error, Validator: "csi-olm", Message: fmt.Sprintf("missing: %v", err)}}
	}
	defer df.Close()
	labels, err := DockerfileLabels(df)
	if err != nil {
		return []Problem{{File: dockerfilePath, Level: Error, Validator: "csi-olm", Message: err.Error()}}
	}
	var problems []Problem
	add := func(format string, args ...any) {
		problems = append(problems, Problem{File: dockerfilePath, Level: Error, Validator: "csi-olm", Message: fmt.Sprintf(format, args...)})
	}
	for _, k := range slices.Sorted(maps.Keys(file.Annotations)) {
		if got, ok := labels[k]; !ok {
			add("LABEL %s is missing; %s sets it to %q", k, registryv1.AnnotationsFile, file.Annotations[k])
		} else if got != file.Annotations[k] {
			add("LABEL %s=%q disagrees with %s (%q)", k, got, registryv1.AnnotationsFile, file.Annotations[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if _, ok := file.Annotations[k]; !ok && strings.HasPrefix(k, "operators.operatorframework.io.bundle.") {
			add("LABEL %s is not in %s", k, registryv1.AnnotationsFile)
		}
	}
	for _, k := range []string{registryv1.PackageAnnotation, registryv1.ChannelsAnnotation, registryv1.DefaultChannelAnnotation} {
		if file.Annotations[k] == "" {
			problems = append(problems, Problem{File: annotationsPath, Level: Error, Validator: "csi-olm", Message: fmt.Sprintf("annotation %s is missing", k)})
		}
	}
	return problems
}

// DockerfileLabels reads the LABEL instructions of a Dockerfile written in the one-label-per-line
// form that bundle Dockerfiles use.
func DockerfileLabels(r io.Reader) (map[string]string, error) {
	labels := map[string]string{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(text, "LABEL ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(rest), "=")
		unquotedSpace := !strings.HasPrefix(v, `"`) && strings.ContainsAny(v, " \t")
		if !ok || k == "" || strings.ContainsAny(k, " \t") || unquotedSpace {
			return nil, fmt.Errorf("line %d: LABEL must be one key=value pair: %q", line, text)
		}
		labels[k] = strings.Trim(v, `"`)
	}
	return labels, sc.Err()
}

// manifestIndex maps objects to the manifest files that hold them.
type manifestIndex map[string]string

func (m manifestIndex) lookup(kind, name, fallback string) string {
	if f, ok := m[kind+"/"+name]; ok {
		return f
	}
	return fallback
}

// lookupName finds a file by object name alone: validator results carry only the name.
func (m manifestIndex) lookupName(name, fallback string) string {
	for key, f := range m {
		if _, n, _ := strings.Cut(key, "/"); n == name {
			return f
		}
	}
	return fallback
}

func indexManifests(dir string) (manifestIndex, []Problem) {
	index := manifestIndex{}
	objs, problems := readManifests(dir)
	for _, o := range objs {
		index[o.Obj.GetKind()+"/"+o.Obj.GetName()] = o.File
	}
	return index, problems
}

// manifestObject is one document of a file in manifests/.
type manifestObject struct {
	File string
	Obj  *unstructured.Unstructured
}

// readManifests decodes every document of every file directly in manifests/, files in name
// order, and reports, as Load problems, the files it cannot read or decode. Subdirectories are
// passed over.
func readManifests(dir string) ([]manifestObject, []Problem) {
	var objs []manifestObject
	var problems []Problem
	manifestsDir := filepath.Join(dir, registryv1.ManifestsDir)
	entries, err := os.ReadDir(manifestsDir)
	if err != nil {
		return nil, []Problem{{File: manifestsDir, Level: Error, Validator: "Load", Message: err.Error()}}
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		file := filepath.Join(manifestsDir, e.Name())
		raw, err := os.ReadFile(file)
		if err != nil {
			problems = append(problems, Problem{File: file, Level: Error, Validator: "Load", Message: err.Error()})
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if !errors.Is(err, io.EOF) {
					problems = append(problems, Problem{File: file, Level: Error, Validator: "Load", Message: fmt.Sprintf("not a valid manifest: %v", err)})
				}
				break
			}
			if obj.Object != nil {
				objs = append(objs, manifestObject{File: file, Obj: &obj})
			}
		}
	}
	return objs, problems
}

// ExplainerFor explains warnings with the waivers of the operator definitions.
func ExplainerFor(operators []definition.Operator) Explainer {
	type release struct {
		op      *definition.Operator
		version string
	}
	byCSV := map[string]release{}
	for i := range operators {
		for _, r := range operators[i].Releases {
			byCSV[operators[i].CSVName(r.Version)] = release{&operators[i], r.Version}
		}
	}
	return func(csvName, warning string) string {
		if r, ok := byCSV[csvName]; ok {
			return r.op.WaiverFor(r.version, warning)
		}
		return ""
	}
}

// Counts tallies problems: errors, unexplained warnings and explained warnings.
func Counts(problems []Problem) (errs, warnings, explained int) {
	for _, p := range problems {
		switch {
		case p.Level == Error:
			errs++
		case p.Explained != "":
			explained++
		default:
			warnings++
		}
	}
	return errs, warnings, explained
}
