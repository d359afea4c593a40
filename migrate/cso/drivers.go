package cso

import (
	"fmt"
	"slices"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/names/ebs"
	"github.com/csi-olm/csi-olm/internal/names/manila"
)

// cso is where the cluster-storage-operator runs the CSI driver operators and, for EBS, the
// driver itself.
const csoNamespace = "openshift-cluster-csi-drivers"

// driver is what the migration of one OLM-era operator needs to know (docs/architecture.md#the-three-drivers).
type driver struct {
	name     string
	pkg      string
	operator string
	// cr returns an empty OLM-era CR; crResource names it for permission checks.
	cr         func() client.Object
	crKind     string
	crResource string
	finalizer  string
	// clusterCSIDriver is the CSO-era CR.
	clusterCSIDriver string
	operands         []Operand
	// operandNamespace is where the CSO-era operator runs the driver.
	operandNamespace string
}

var drivers = map[string]driver{
	"ebs": {
		name: "ebs", pkg: ebs.Package, operator: ebs.OperatorName,
		cr:     func() client.Object { return &ebsv1alpha1.AWSEBSDriver{} },
		crKind: ebsv1alpha1.Kind, crResource: "awsebsdrivers", finalizer: ebsv1alpha1.Finalizer,
		clusterCSIDriver: string(operatorv1.AWSEBSCSIDriver),
		operands: []Operand{
			{Kind: "Deployment", Namespace: ebs.OperandNamespace, Name: ebs.ControllerName},
			{Kind: "DaemonSet", Namespace: ebs.OperandNamespace, Name: ebs.NodeName},
			{Kind: "CSIDriver", Name: ebs.CSIDriver},
		},
		operandNamespace: csoNamespace,
	},
	"manila": {
		name: "manila", pkg: manila.Package, operator: manila.OperatorName,
		cr:     func() client.Object { return &manilav1alpha1.ManilaDriver{} },
		crKind: manilav1alpha1.Kind, crResource: "maniladrivers", finalizer: manilav1alpha1.Finalizer,
		clusterCSIDriver: string(operatorv1.ManilaCSIDriver),
		operands: []Operand{
			{Kind: "Deployment", Namespace: manila.OperandNamespace, Name: manila.ControllerName},
			{Kind: "DaemonSet", Namespace: manila.OperandNamespace, Name: manila.NodeName},
			{Kind: "DaemonSet", Namespace: manila.OperandNamespace, Name: manila.NFSNodeName},
			{Kind: "CSIDriver", Name: manila.CSIDriver},
		},
		operandNamespace: manila.OperandNamespace,
	},
}

func lookupDriver(name string) (driver, error) {
	d, ok := drivers[name]
	if !ok {
		names := make([]string, 0, len(drivers))
		for n := range drivers {
			names = append(names, n)
		}
		slices.Sort(names)
		return driver{}, fmt.Errorf("unknown driver %q: use %s", name, strings.Join(names, " or "))
	}
	return d, nil
}

// Operand is one object of the driver the old operator created, and what becomes of it.
type Operand struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// Adopted is whether the CSO-era operator takes it over by name; Note says why not.
	Adopted bool   `json:"adopted"`
	Note    string `json:"note,omitempty"`
}

func (o Operand) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

func (o Operand) object() client.Object {
	switch o.Kind {
	case "Deployment":
		return &appsv1.Deployment{}
	case "DaemonSet":
		return &appsv1.DaemonSet{}
	}
	return &storagev1.CSIDriver{}
}
