package cso

import (
	"slices"
	"testing"
)

// TestDriversMatchDesign pins the names a hand-over depends on (docs/architecture.md#the-three-drivers and docs/architecture.md#upgrades): a typo
// here would delete the wrong Subscription's operator or create a ClusterCSIDriver nobody watches.
func TestDriversMatchDesign(t *testing.T) {
	tests := []struct {
		driver, pkg, operator, crKind, finalizer, clusterCSIDriver, operandNamespace string
		adoptedInPlace                                                               bool
	}{
		{"ebs", "aws-ebs-csi-driver-operator", "aws-ebs-csi-driver-operator", "AWSEBSDriver", "operator.csi.openshift.io", "ebs.csi.aws.com", "openshift-cluster-csi-drivers", false},
		{"manila", "manila-csi-driver-operator", "csi-driver-manila-operator", "ManilaDriver", "finalizer.manila.csi.openshift.io", "manila.csi.openstack.org", "openshift-manila-csi-driver", true},
	}
	for _, tt := range tests {
		t.Run(tt.driver, func(t *testing.T) {
			d, err := lookupDriver(tt.driver)
			if err != nil {
				t.Fatal(err)
			}
			got := [...]string{d.pkg, d.operator, d.crKind, d.finalizer, d.clusterCSIDriver, d.operandNamespace}
			want := [...]string{tt.pkg, tt.operator, tt.crKind, tt.finalizer, tt.clusterCSIDriver, tt.operandNamespace}
			if got != want {
				t.Errorf("driver %s = %q, want %q", tt.driver, got, want)
			}
			inPlace := true
			for _, o := range d.operands {
				if o.Namespace != "" && o.Namespace != d.operandNamespace {
					inPlace = false
				}
			}
			if inPlace != tt.adoptedInPlace {
				t.Errorf("driver %s: operands adopted in place = %v, want %v", tt.driver, inPlace, tt.adoptedInPlace)
			}
		})
	}
	if _, err := lookupDriver("gce-pd"); err == nil || err.Error() != `unknown driver "gce-pd": use ebs or manila` {
		t.Errorf("lookupDriver(gce-pd) = %v", err)
	}
}

func TestStepNamesAreTheStepsInOrder(t *testing.T) {
	d, err := lookupDriver("manila")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range (&Migrate{}).steps(nil, d, &Plan{}) {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, stepNames) {
		t.Errorf("the steps run as %v, but the journal is checked against %v", names, stepNames)
	}
}
