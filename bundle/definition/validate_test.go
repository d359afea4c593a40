package definition_test

import (
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
)

func TestShippedDefinitionsAreValid(t *testing.T) {
	if err := definition.Validate(drivers.All()); err != nil {
		t.Fatalf("shipped definitions are invalid:\n%v", err)
	}
}

// Indexes into drivers.All().
const (
	community = 0
	efs       = 1
	ebs       = 2
	manila    = 3
)

func TestValidateRejectsBadDefinitions(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(ops []definition.Operator)
		want   []string // every substring must appear in the error
	}{
		{
			name:   "duplicate version",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[2].Version = "4.10.0" },
			want:   []string{"aws-efs-csi-driver-operator.v4.10.0: duplicate version 4.10.0 in package aws-efs-operator"},
		},
		{
			name:   "duplicate version across operators of one package",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[0].Version = "0.0.8" },
			want:   []string{"duplicate version 0.0.8 in package aws-efs-operator (also aws-efs-operator.v0.0.8)"},
		},
		{
			name:   "unparsable skipRange",
			mutate: func(ops []definition.Operator) { ops[ebs].Releases[0].SkipRange = ">=4.3 <<4.5.0" },
			want:   []string{`aws-ebs-csi-driver-operator.v4.5.0: skipRange ">=4.3 <<4.5.0" does not parse`},
		},
		{
			name:   "skipRange containing the release itself",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[1].SkipRange = ">=0.0.6 <=4.10.0" },
			want:   []string{`skipRange ">=0.0.6 <=4.10.0" contains the release's own version 4.10.0`},
		},
		{
			name:   "replaces pointing nowhere",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[1].Replaces = "aws-efs-operator.v0.0.5" },
			want:   []string{`aws-efs-csi-driver-operator.v4.10.0: replaces "aws-efs-operator.v0.0.5", which is no release of package aws-efs-operator`},
		},
		{
			name:   "replaces a newer release",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[1].Replaces = "aws-efs-csi-driver-operator.v4.11.0" },
			want:   []string{`replaces "aws-efs-csi-driver-operator.v4.11.0", whose version 4.11.0 is not older than 4.10.0`},
		},
		{
			name:   "skips pointing nowhere",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[2].Skips = []string{"aws-efs-operator.v0.0.1"} },
			want:   []string{`skips "aws-efs-operator.v0.0.1", which is no release of package aws-efs-operator`},
		},
		{
			name:   "default channel absent from annotations",
			mutate: func(ops []definition.Operator) { ops[manila].DefaultChannel = "fast" },
			want:   []string{`manila-csi-driver-operator: default channel "fast" is absent from every release's channels`},
		},
		{
			name:   "release without channels",
			mutate: func(ops []definition.Operator) { ops[community].Releases[0].Channels = nil },
			want:   []string{"aws-efs-operator.v0.0.6: no channels"},
		},
		{
			name:   "owned CRD missing",
			mutate: func(ops []definition.Operator) { ops[efs].OwnedCRDs[0].Manifest = nil },
			want:   []string{`owned CRD "sharedvolumes.aws-efs.managed.openshift.io" is missing`},
		},
		{
			name:   "owned CRD manifest of another kind",
			mutate: func(ops []definition.Operator) { ops[ebs].OwnedCRDs[0].Kind = "Driver" },
			want:   []string{`manifest kind is "AWSEBSDriver", not "Driver"`, `example is a csi.openshift.io/v1alpha1, Kind=AWSEBSDriver`},
		},
		{
			name:   "owned CRD manifest is not a CRD",
			mutate: func(ops []definition.Operator) { ops[manila].OwnedCRDs[0].Manifest = []byte("spec: [") },
			want:   []string{`owned CRD "maniladrivers.csi.openshift.io": manifest is not a CustomResourceDefinition`},
		},
		{
			name:   "owned CRD version not served",
			mutate: func(ops []definition.Operator) { ops[manila].OwnedCRDs[0].Version = "v1" },
			want:   []string{`manifest serves no version "v1"`},
		},
		{
			name: "operand image with neither tag nor digest",
			mutate: func(ops []definition.Operator) {
				ops[efs].Releases[2].Images[0].Ref = "quay.io/csi-olm/aws-efs-csi-driver"
			},
			want: []string{`image "aws-efs-csi-driver" "quay.io/csi-olm/aws-efs-csi-driver" has neither a tag nor a digest`},
		},
		{
			name: "operator image on the moving tag latest",
			mutate: func(ops []definition.Operator) {
				ops[manila].Releases[0].OperatorImage = "quay.io/openshift/origin-csi-driver-manila-operator:latest"
			},
			want: []string{`operator image "quay.io/openshift/origin-csi-driver-manila-operator:latest" names the moving tag latest`},
		},
		{
			name:   "image that is no reference",
			mutate: func(ops []definition.Operator) { ops[ebs].Releases[0].Images[1].Ref = "Not An Image" },
			want:   []string{`image "csi-external-provisioner" "Not An Image" is not an image reference`},
		},
		{
			name:   "empty install-mode list",
			mutate: func(ops []definition.Operator) { ops[efs].InstallModes = nil },
			want:   []string{"aws-efs-csi-driver-operator: install mode list is empty"},
		},
		{
			name: "unknown and repeated install modes",
			mutate: func(ops []definition.Operator) {
				ops[ebs].InstallModes = []v1alpha1.InstallModeType{"AllNamespaces", "AllNamespaces", "EveryNamespace"}
			},
			want: []string{`install mode "AllNamespaces" is listed twice`, `install mode "EveryNamespace" is not one of`},
		},
		{
			name: "wildcard permission on core resources",
			mutate: func(ops []definition.Operator) {
				ops[efs].ClusterRules = append(ops[efs].ClusterRules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"*"}})
			},
			want: []string{"wildcard in resources", "wildcard in verbs"},
		},
		{
			name: "rule that grants nothing",
			mutate: func(ops []definition.Operator) {
				ops[manila].NamespaceRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}
			},
			want: []string{"namespaceRules[0] grants nothing"},
		},
		{
			name:   "version that is not semver",
			mutate: func(ops []definition.Operator) { ops[community].Releases[1].Version = "0.7" },
			want:   []string{`aws-efs-operator.v0.7: version "0.7" is not a semantic version`, `aws-efs-operator.v0.0.8: replaces "aws-efs-operator.v0.0.7", which is no release`},
		},
		{
			name:   "createdAt that is no time",
			mutate: func(ops []definition.Operator) { ops[ebs].Releases[0].CreatedAt = "2020-03-24:13:08:00" },
			want:   []string{`createdAt "2020-03-24:13:08:00" is not an RFC 3339 time`},
		},
		{
			name:   "minKubeVersion that is not semver",
			mutate: func(ops []definition.Operator) { ops[ebs].MinKubeVersion = "1.17" },
			want:   []string{`minKubeVersion "1.17" is not a semantic version`},
		},
		{
			name:   "com.redhat.openshift.versions that does not parse",
			mutate: func(ops []definition.Operator) { ops[ebs].OpenShiftVersions = "4.5" },
			want:   []string{`com.redhat.openshift.versions "4.5": "4.5" does not start with v`},
		},
		{
			name:   "OpenShift minor that does not parse",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[0].OpenShift = "4.x" },
			want:   []string{`aws-efs-csi-driver-operator.v4.9.0: OpenShift minor: "4.x" is not an OpenShift minor`},
		},
		{
			name:   "release version of another minor than it declares",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[2].OpenShift = "4.12" },
			want: []string{
				"aws-efs-csi-driver-operator.v4.11.0: version 4.11.0 is not a release of OpenShift 4.12, the minor it declares",
				`image "csi-external-provisioner" is tagged for OpenShift 4.11, but the release is built for 4.12`,
			},
		},
		{
			name: "sidecar tagged for another minor",
			mutate: func(ops []definition.Operator) {
				ops[efs].Releases[1].Images[1].Ref = "quay.io/openshift/origin-csi-external-provisioner:4.9"
			},
			want: []string{`aws-efs-csi-driver-operator.v4.10.0: image "csi-external-provisioner" is tagged for OpenShift 4.9, but the release is built for 4.10`},
		},
		{
			name: "channel named after a later minor",
			mutate: func(ops []definition.Operator) {
				ops[efs].Releases[0].Channels = append(ops[efs].Releases[0].Channels, "4.10")
			},
			want: []string{`aws-efs-csi-driver-operator.v4.9.0: channel "4.10" is named after OpenShift 4.10, later than the release's minor 4.9`},
		},
		{
			name: "operator's OpenShift range beside the releases' minors",
			mutate: func(ops []definition.Operator) {
				ops[efs].OpenShiftVersions = "v4.9"
				ops[efs].MinKubeVersion = "1.22.0"
			},
			want: []string{`the releases declare their OpenShift minor, from which com.redhat.openshift.versions and minKubeVersion follow; the operator's ("v4.9", "1.22.0") would disagree`},
		},
		{
			name:   "some releases without their minor",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[0].OpenShift = "" },
			want:   []string{"aws-efs-csi-driver-operator: 2 of 3 releases declare their OpenShift minor"},
		},
		{
			name:   "a minor's index without the default channel",
			mutate: func(ops []definition.Operator) { ops[efs].Releases[0].Channels = []string{"4.9"} },
			want:   []string{`aws-efs-csi-driver-operator: the v4.9 index holds no release in the default channel "stable"`},
		},
		{
			name: "unknown infrastructure feature",
			mutate: func(ops []definition.Operator) {
				ops[efs].InfrastructureFeatures = append(ops[efs].InfrastructureFeatures, "quantum")
			},
			want: []string{`unknown infrastructure feature "quantum"`},
		},
		{
			name: "two images in one env var",
			mutate: func(ops []definition.Operator) {
				ops[efs].Releases[0].Images[1].Env = ops[efs].Releases[0].Images[0].Env
			},
			want: []string{`env "DRIVER_IMAGE" carries two images`},
		},
		{
			name: "Deployment that drops an image env var",
			mutate: func(ops []definition.Operator) {
				ops[ebs].Releases[0].Images = append(ops[ebs].Releases[0].Images, definition.Image{
					Name: "extra", Env: "EXTRA_IMAGE", Ref: "quay.io/x/y:v1",
				})
				ops[ebs].Deployment = func(r definition.Release) appsv1.DeploymentSpec {
					r.Images = r.Images[:len(r.Images)-1]
					return drivers.All()[ebs].Deployment(r)
				}
			},
			want: []string{`the operator Deployment does not pass image "extra" in env EXTRA_IMAGE`},
		},
		{
			name: "invalid package and namespace names",
			mutate: func(ops []definition.Operator) {
				ops[manila].Package = "Manila_Operator"
				ops[manila].SuggestedNamespace = "openshift.manila"
			},
			want: []string{`package name "Manila_Operator"`, `suggested namespace "openshift.manila"`},
		},
		{
			name: "example of another API",
			mutate: func(ops []definition.Operator) {
				ops[efs].OwnedCRDs[0].Example = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
			},
			want: []string{"example is a /v1, Kind=ConfigMap, not a aws-efs.managed.openshift.io/v1alpha1 SharedVolume"},
		},
		{
			name: "an internal CRD with an example",
			mutate: func(ops []definition.Operator) {
				ops[efs].OwnedCRDs[1].Example = ops[efs].OwnedCRDs[0].Example
			},
			want: []string{"is internal: an example in alm-examples would invite users to create one"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := drivers.All()
			tt.mutate(ops)
			err := definition.Validate(ops)
			if err == nil {
				t.Fatal("Validate accepted the bad definition")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}
}

// Validation reports every problem, not the first one.
func TestValidateReportsEveryProblem(t *testing.T) {
	ops := drivers.All()
	ops[efs].InstallModes = nil
	ops[ebs].Releases[0].SkipRange = "nonsense"
	ops[manila].Releases[0].OperatorImage = "quay.io/x/y:latest"
	err := definition.Validate(ops)
	if err == nil {
		t.Fatal("Validate accepted three bad definitions")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 problems, one per line, got %d:\n%v", len(lines), err)
	}
	for i, prefix := range []string{"aws-efs-csi-driver-operator:", "aws-ebs-csi-driver-operator.v4.5.0:", "manila-csi-driver-operator.v4.5.0:"} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("problem %d = %q, want it to name %q", i, lines[i], prefix)
		}
	}
}

func TestWaiverFor(t *testing.T) {
	o := drivers.All()[efs]
	const warning = `channel(s) ["4.10" "4.9"] are not following the recommended naming convention: https://...`
	for _, r := range o.Releases {
		if o.WaiverFor(r.Version, warning) == "" {
			t.Errorf("the warning on %s's channels named after minors is not explained", r.Version)
		}
	}
	if got := o.WaiverFor("4.9.0", "some other warning"); got != "" {
		t.Errorf("an unrelated warning was explained: %q", got)
	}
	limited := definition.Operator{Waivers: []definition.Waiver{{Contains: "naming convention", Versions: []string{"4.9.0"}, Reason: "r"}}}
	if got := limited.WaiverFor("4.11.0", warning); got != "" {
		t.Errorf("a waiver limited to 4.9.0 explained 4.11.0: %q", got)
	}
}
