package kube

import (
	"context"
	"errors"
	"fmt"

	configclient "github.com/openshift/client-go/config/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/csi-olm/csi-olm/internal/openshift"
)

// ClusterVersionName is the one ClusterVersion of an OpenShift cluster.
const ClusterVersionName = "version"

// ErrNoClusterVersion is ClusterMinor's error on a cluster that does not say which OpenShift it
// runs: a plain Kubernetes cluster, or one whose cluster-version operator has not written it.
var ErrNoClusterVersion = errors.New("the cluster has no ClusterVersion " + ClusterVersionName + ": it does not say which OpenShift it runs")

// ClusterMinor reads the OpenShift minor a cluster runs, as its config API serves it: the minor of
// ClusterVersion version's desired release, the one the cluster runs or is moving to, whose
// catalogs OLM reads; or, when it names none, of the newest release of its history.
func ClusterMinor(ctx context.Context, cfg *rest.Config) (openshift.Minor, error) {
	cs, err := configclient.NewForConfig(cfg)
	if err != nil {
		return openshift.Minor{}, err
	}
	cv, err := cs.ConfigV1().ClusterVersions().Get(ctx, ClusterVersionName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return openshift.Minor{}, ErrNoClusterVersion
	case err != nil:
		return openshift.Minor{}, fmt.Errorf("reading ClusterVersion %s: %w", ClusterVersionName, err)
	}
	version := cv.Status.Desired.Version
	if version == "" && len(cv.Status.History) > 0 {
		version = cv.Status.History[0].Version
	}
	if version == "" {
		return openshift.Minor{}, fmt.Errorf("ClusterVersion %s names no release in status.desired or status.history", ClusterVersionName)
	}
	m, err := openshift.MinorOf(version)
	if err != nil {
		return openshift.Minor{}, fmt.Errorf("ClusterVersion %s: %w", ClusterVersionName, err)
	}
	return m, nil
}
