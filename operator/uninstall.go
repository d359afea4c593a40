package operator

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/assets"
)

// operandObject is one object the driver consists of.
type operandObject struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (o operandObject) String() string {
	if o.namespace == "" {
		return o.gvk.Kind + " " + o.name
	}
	return o.gvk.Kind + " " + o.namespace + "/" + o.name
}

// operandObjects lists every object of the driver: the manifests the operator applies and the
// community driver's SCC.
func operandObjects(namespace string) ([]operandObject, error) {
	read := assets.For(namespace)
	var objects []operandObject
	for _, f := range assets.OperandFiles {
		raw, err := read(f)
		if err != nil {
			return nil, err
		}
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("asset %s: %w", f, err)
		}
		objects = append(objects, operandObject{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()})
	}
	return append(objects, operandObject{gvk: sccGVR.GroupVersion().WithKind("SecurityContextConstraints"), name: efs.CommunitySCC}), nil
}

func (l *lifecycle) resource(o operandObject) (dynamic.ResourceInterface, error) {
	mapping, err := l.mapper.RESTMapping(o.gvk.GroupKind(), o.gvk.Version)
	if err != nil {
		return nil, err
	}
	if o.namespace == "" {
		return l.dynamic.Resource(mapping.Resource), nil
	}
	return l.dynamic.Resource(mapping.Resource).Namespace(o.namespace), nil
}

// present returns the operand objects that still exist. Kinds the cluster does not serve (no
// ServiceMonitor CRD, say) have nothing to remove.
func (l *lifecycle) present(ctx context.Context) ([]operandObject, error) {
	var present []operandObject
	for _, o := range l.objects {
		r, err := l.resource(o)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, err := r.Get(ctx, o.name, metav1.GetOptions{}); err == nil {
			present = append(present, o)
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s: %w", o, err)
		}
	}
	return present, nil
}

// errVolumeInUse stops a round of removal: a pod began to use an EFS volume after the round
// looked.
var errVolumeInUse = errors.New("a pod began to use an EFS volume during the removal")

// servesVolumes reports whether an operand object is one the driver's volumes depend on: its
// CSIDriver, node DaemonSet and controller Deployment.
func (o operandObject) servesVolumes() bool {
	switch o.gvk.Kind {
	case "CSIDriver", "DaemonSet", "Deployment":
		return true
	}
	return false
}

// delete deletes the objects, those that serve volumes first. The removal fence keeps new uses
// out; where the cluster cannot enforce it, uses are looked for again right before each object
// that serves volumes, and one begun meanwhile stops the round with errVolumeInUse. Without the
// fence the milliseconds between such a look and the delete stay open. (A fence an admin takes
// down is caught by the look before each round.)
func (l *lifecycle) delete(ctx context.Context, objects []operandObject) error {
	var serving, rest []operandObject
	for _, o := range objects {
		if o.servesVolumes() {
			serving = append(serving, o)
		} else {
			rest = append(rest, o)
		}
	}
	for _, o := range append(serving, rest...) {
		if o.servesVolumes() && !l.fence.served {
			uses, err := l.volumesInUse(ctx)
			if err != nil {
				return err
			}
			if len(uses) > 0 {
				return errVolumeInUse
			}
		}
		r, err := l.resource(o)
		if err != nil {
			return err
		}
		if err := r.Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o, err)
		}
	}
	return nil
}
