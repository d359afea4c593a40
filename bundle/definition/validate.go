package definition

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// Validate checks a set of operator definitions and returns every problem it finds, each naming
// the operator or release it is about. Operators are checked together because packages are
// shared: a replaces edge may point at another operator's release in the same package.
func Validate(operators []Operator) error {
	v := &validator{csvVersions: map[string]map[string]semver.Version{}}
	seen := map[string]map[string]string{} // package -> version -> CSV name
	for _, o := range operators {
		for _, r := range o.Releases {
			ver, err := semver.Parse(r.Version)
			if err != nil {
				continue // reported by checkRelease
			}
			if seen[o.Package] == nil {
				seen[o.Package] = map[string]string{}
				v.csvVersions[o.Package] = map[string]semver.Version{}
			}
			csv := o.CSVName(r.Version)
			if other, dup := seen[o.Package][ver.String()]; dup {
				v.addf(csv, "duplicate version %s in package %s (also %s): every bundle of a package needs its own version", ver, o.Package, other)
				continue
			}
			seen[o.Package][ver.String()] = csv
			v.csvVersions[o.Package][csv] = ver
		}
	}
	for i := range operators {
		v.checkOperator(&operators[i])
	}
	return errors.Join(v.errs...)
}

type validator struct {
	errs []error
	// csvVersions maps package -> CSV name -> version over every operator, for replaces and skips.
	csvVersions map[string]map[string]semver.Version
}

func (v *validator) addf(where, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
}

var knownInstallModes = []v1alpha1.InstallModeType{
	v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace,
	v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces,
}

func (v *validator) checkOperator(o *Operator) {
	where := o.CSVPrefix
	if where == "" {
		where = "package " + o.Package
	}
	for _, msg := range validation.IsDNS1123Subdomain(o.Package) {
		v.addf(where, "package name %q: %s", o.Package, msg)
	}
	for _, msg := range validation.IsDNS1123Subdomain(o.CSVPrefix) {
		v.addf(where, "CSV prefix %q: %s", o.CSVPrefix, msg)
	}
	if o.Catalog != Community && o.Catalog != Certified {
		v.addf(where, "catalog %q is neither %q nor %q", o.Catalog, Community, Certified)
	}
	for field, value := range map[string]string{"display name": o.DisplayName, "summary": o.Summary, "description": o.Description, "provider name": o.Provider.Name} {
		if value == "" {
			v.addf(where, "%s is empty", field)
		}
	}
	if len(o.IconSVG) == 0 {
		v.addf(where, "icon is empty")
	}
	for _, msg := range validation.IsDNS1123Label(o.SuggestedNamespace) {
		v.addf(where, "suggested namespace %q: %s", o.SuggestedNamespace, msg)
	}
	for _, f := range o.InfrastructureFeatures {
		if _, ok := FeatureAnnotations[f]; !ok {
			v.addf(where, "unknown infrastructure feature %q", f)
		}
	}
	if r := o.InitializationResource; r != nil {
		gvk := r.GetObjectKind().GroupVersionKind()
		if !slices.ContainsFunc(o.NativeAPIs, func(api metav1.GroupVersionKind) bool {
			return api.Group == gvk.Group && api.Version == gvk.Version && api.Kind == gvk.Kind
		}) {
			v.addf(where, "initialization resource is a %s, which is not among the native APIs the operator requires", gvk)
		}
	}
	v.checkOpenShift(where, o)
	v.checkInstallModes(where, o.InstallModes)
	v.checkChannels(where, o)
	v.checkOwnedCRDs(where, o.OwnedCRDs)
	v.checkCRDKubeVersions(where, o)
	v.checkRBAC(where, "clusterRules", o.ClusterRules)
	v.checkRBAC(where, "namespaceRules", o.NamespaceRules)
	if o.ServiceAccount == "" {
		v.addf(where, "service account name is empty")
	}
	if o.DeploymentName == "" || o.Deployment == nil {
		v.addf(where, "operator Deployment is not defined")
	}
	if len(o.Releases) == 0 {
		v.addf(where, "no releases")
	}
	for _, r := range o.Releases {
		v.checkRelease(o, r)
	}
}

// checkOpenShift checks that the OpenShift minors and Kubernetes versions are declared once: by
// every release (Release.OpenShift), from which the rest follows, or by the operator for all.
func (v *validator) checkOpenShift(where string, o *Operator) {
	declared := 0
	for _, r := range o.Releases {
		if r.OpenShift != "" {
			declared++
		}
	}
	if declared == 0 {
		if _, err := openshift.ParseVersions(o.OpenShiftVersions); err != nil {
			v.addf(where, "%v", err)
		}
		if _, err := semver.Parse(o.MinKubeVersion); err != nil {
			v.addf(where, "minKubeVersion %q is not a semantic version: %v", o.MinKubeVersion, err)
		}
		return
	}
	if declared < len(o.Releases) {
		v.addf(where, "%d of %d releases declare their OpenShift minor: declare it for every release or for none", declared, len(o.Releases))
	}
	if o.OpenShiftVersions != "" || o.MinKubeVersion != "" {
		v.addf(where, "the releases declare their OpenShift minor, from which com.redhat.openshift.versions and minKubeVersion follow; the operator's (%q, %q) would disagree: leave them empty",
			o.OpenShiftVersions, o.MinKubeVersion)
	}
}

// checkReleaseMinor checks that a release's version, and the tags of the images built for an
// OpenShift minor (OpenShift's sidecars, tagged 4.N), name the minor the release declares.
func (v *validator) checkReleaseMinor(where string, r Release, version semver.Version, versionOK bool) {
	m, err := openshift.ParseMinor(r.OpenShift)
	if err != nil {
		v.addf(where, "OpenShift minor: %v", err)
		return
	}
	if versionOK && (version.Major != uint64(m.Major) || version.Minor != uint64(m.Minor)) {
		v.addf(where, "version %s is not a release of OpenShift %s, the minor it declares", version, m)
	}
	for _, img := range r.Images {
		tagged, err := reference.ParseNormalizedNamed(img.Ref)
		if err != nil {
			continue // reported by checkImage
		}
		t, ok := tagged.(reference.Tagged)
		if !ok {
			continue
		}
		if tm, err := openshift.ParseMinor(t.Tag()); err == nil && tm != m {
			v.addf(where, "image %q is tagged for OpenShift %s, but the release is built for %s", img.Name, tm, m)
		}
	}
	// A channel named like a minor pins Subscriptions to that minor's builds: a release may be in
	// its own minor's channel and in earlier ones (which follow the cluster up), never in a later
	// one's. Other names are left to the operator-framework validator's naming advice.
	for _, ch := range r.Channels {
		if cm, err := openshift.ParseMinor(ch); err == nil && m.Less(cm) {
			v.addf(where, "channel %q is named after OpenShift %s, later than the release's minor %s", ch, cm, m)
		}
	}
}

func (v *validator) checkInstallModes(where string, modes []v1alpha1.InstallModeType) {
	if len(modes) == 0 {
		v.addf(where, "install mode list is empty: OLM could not install the operator anywhere")
	}
	for i, m := range modes {
		if !slices.Contains(knownInstallModes, m) {
			v.addf(where, "install mode %q is not one of %v", m, knownInstallModes)
		}
		if slices.Contains(modes[:i], m) {
			v.addf(where, "install mode %q is listed twice", m)
		}
	}
}

func (v *validator) checkChannels(where string, o *Operator) {
	if o.DefaultChannel == "" {
		v.addf(where, "default channel is empty")
		return
	}
	if !slices.ContainsFunc(o.Releases, func(r Release) bool { return slices.Contains(r.Channels, o.DefaultChannel) }) {
		v.addf(where, "default channel %q is absent from every release's channels, so no bundle's annotations would carry it", o.DefaultChannel)
		return
	}
	// Each minor's index is a catalog of its own, whose package needs its default channel.
	for _, m := range CatalogMinors([]Operator{*o})[o.Catalog] {
		if !slices.ContainsFunc(o.ReleasesIn(m), func(r Release) bool { return slices.Contains(r.Channels, o.DefaultChannel) }) {
			v.addf(where, "the %s index holds no release in the default channel %q: its catalog would be invalid", m.Index(), o.DefaultChannel)
		}
	}
}

func (v *validator) checkOwnedCRDs(where string, crds []OwnedCRD) {
	for i, owned := range crds {
		at := fmt.Sprintf("owned CRD %q", owned.Name)
		if slices.ContainsFunc(crds[:i], func(c OwnedCRD) bool { return c.Name == owned.Name }) {
			v.addf(where, "%s is listed twice", at)
			continue
		}
		if len(owned.Manifest) == 0 {
			v.addf(where, "%s is missing: it has no manifest to ship in the bundle", at)
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(owned.Manifest, &crd); err != nil {
			v.addf(where, "%s: manifest is not a CustomResourceDefinition: %v", at, err)
			continue
		}
		if crd.Name != owned.Name {
			v.addf(where, "%s: manifest defines %q instead", at, crd.Name)
		}
		if crd.Spec.Names.Kind != owned.Kind {
			v.addf(where, "%s: manifest kind is %q, not %q", at, crd.Spec.Names.Kind, owned.Kind)
		}
		if !slices.ContainsFunc(crd.Spec.Versions, func(cv apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return cv.Name == owned.Version && cv.Served
		}) {
			v.addf(where, "%s: manifest serves no version %q", at, owned.Version)
		}
		if owned.DisplayName == "" || owned.Description == "" {
			v.addf(where, "%s needs a display name and a description for OperatorHub", at)
		}
		if owned.Internal {
			if owned.Example != nil {
				v.addf(where, "%s is internal: an example in alm-examples would invite users to create one", at)
			}
			continue
		}
		if owned.Example == nil {
			v.addf(where, "%s has no example for alm-examples", at)
			continue
		}
		gvk := owned.Example.GetObjectKind().GroupVersionKind()
		if gvk.Group != crd.Spec.Group || gvk.Version != owned.Version || gvk.Kind != owned.Kind {
			v.addf(where, "%s: example is a %s, not a %s/%s %s", at, gvk, crd.Spec.Group, owned.Version, owned.Kind)
		}
	}
}

func (v *validator) checkRBAC(where, field string, rules []rbacv1.PolicyRule) {
	for _, msg := range WildcardProblems(field, rules) {
		v.addf(where, "%s", msg)
	}
}

// WildcardProblems reports rules that grant nothing or use a wildcard. Every permission an
// operator holds is listed, so a review of its bundle shows exactly what it can do.
func WildcardProblems(field string, rules []rbacv1.PolicyRule) []string {
	var problems []string
	for i, rule := range rules {
		at := fmt.Sprintf("%s[%d]", field, i)
		if len(rule.Verbs) == 0 || (len(rule.Resources) == 0 && len(rule.NonResourceURLs) == 0) {
			problems = append(problems, at+" grants nothing: it needs verbs and resources")
		}
		for _, list := range []struct {
			name   string
			values []string
		}{{"apiGroups", rule.APIGroups}, {"resources", rule.Resources}, {"verbs", rule.Verbs}} {
			if slices.Contains(list.values, "*") {
				problems = append(problems, fmt.Sprintf("%s: wildcard in %s (apiGroups %q, resources %q): list what the operator needs", at, list.name, rule.APIGroups, rule.Resources))
			}
		}
	}
	return problems
}

func (v *validator) checkRelease(o *Operator, r Release) {
	where := o.CSVName(r.Version)
	version, err := semver.Parse(r.Version)
	if err != nil {
		v.addf(where, "version %q is not a semantic version: %v", r.Version, err)
	}
	if len(r.Channels) == 0 {
		v.addf(where, "no channels: the bundle would belong to no channel")
	}
	for _, c := range r.Channels {
		if c == "" {
			v.addf(where, "empty channel name")
		}
	}
	known := v.csvVersions[o.Package]
	if r.Replaces != "" {
		if prev, ok := known[r.Replaces]; !ok {
			v.addf(where, "replaces %q, which is no release of package %s", r.Replaces, o.Package)
		} else if err == nil && !prev.LT(version) {
			v.addf(where, "replaces %q, whose version %s is not older than %s", r.Replaces, prev, version)
		}
	}
	for _, s := range r.Skips {
		if _, ok := known[s]; !ok {
			v.addf(where, "skips %q, which is no release of package %s", s, o.Package)
		}
	}
	rule, rangeErr := upgrade.Edges{Replaces: r.Replaces, Skips: r.Skips, SkipRange: r.SkipRange}.Compile()
	switch {
	case rangeErr != nil:
		v.addf(where, "%v", rangeErr)
	case err == nil && rule.InRange(version):
		v.addf(where, "skipRange %q contains the release's own version %s", r.SkipRange, version)
	}
	if r.OpenShift != "" {
		v.checkReleaseMinor(where, r, version, err == nil)
	}
	if _, err := time.Parse(time.RFC3339, r.CreatedAt); err != nil {
		v.addf(where, "createdAt %q is not an RFC 3339 time: %v", r.CreatedAt, err)
	}
	v.checkImage(where, "operator image", r.OperatorImage)
	names, envs := map[string]bool{}, map[string]bool{}
	for _, img := range r.Images {
		at := fmt.Sprintf("image %q", img.Name)
		if img.Name == "" {
			v.addf(where, "an image has no name")
		}
		if names[img.Name] {
			v.addf(where, "%s is listed twice", at)
		}
		names[img.Name] = true
		if img.Env != "" {
			for _, msg := range validation.IsEnvVarName(img.Env) {
				v.addf(where, "%s: env %q: %s", at, img.Env, msg)
			}
			if envs[img.Env] {
				v.addf(where, "%s: env %q carries two images", at, img.Env)
			}
			envs[img.Env] = true
		}
		v.checkImage(where, at, img.Ref)
	}
	if o.Deployment != nil {
		v.checkDeployment(where, o, r)
	}
}

func (v *validator) checkImage(where, what, ref string) {
	if problem := ImageProblem(ref, false); problem != "" {
		v.addf(where, "%s %s", what, problem)
	}
}

// ImageProblem says what is wrong with an image reference, or returns "". Every reference needs
// a release tag or a digest, so that it names one build; pinned demands the digest, which is what
// a released bundle carries so that it always deploys the same bits.
func ImageProblem(ref string, pinned bool) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Sprintf("%q is not an image reference: %v", ref, err)
	}
	_, digested := named.(reference.Digested)
	tagged, isTagged := named.(reference.Tagged)
	switch {
	case pinned && !digested:
		return fmt.Sprintf("%q is not pinned by digest: `csi-olm release` pins it as repo@sha256:<digest>", ref)
	case !digested && !isTagged:
		return fmt.Sprintf("%q has neither a tag nor a digest: name a release tag", ref)
	case !digested && tagged.Tag() == "latest":
		return fmt.Sprintf("%q names the moving tag latest: name a release tag", ref)
	}
	return ""
}

// checkDeployment makes sure the Deployment a definition builds runs the release's operator
// image and hands it every operand image.
func (v *validator) checkDeployment(where string, o *Operator, r Release) {
	spec := o.Deployment(r)
	found := map[string]string{}
	runsOperator := false
	for _, c := range spec.Template.Spec.Containers {
		runsOperator = runsOperator || c.Image == r.OperatorImage
		for _, e := range c.Env {
			found[e.Name] = e.Value
		}
	}
	if !runsOperator {
		v.addf(where, "the operator Deployment runs no container with the operator image %q", r.OperatorImage)
	}
	if spec.Template.Spec.ServiceAccountName != o.ServiceAccount {
		v.addf(where, "the operator Deployment runs as %q, not as the service account %q that holds the permissions", spec.Template.Spec.ServiceAccountName, o.ServiceAccount)
	}
	for _, img := range r.Images {
		if img.Env != "" && found[img.Env] != img.Ref {
			v.addf(where, "the operator Deployment does not pass image %q in env %s", img.Name, img.Env)
		}
	}
}
