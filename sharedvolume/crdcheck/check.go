package crdcheck

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/output"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
)

// listPageSize bounds each List response: a cluster may hold many SharedVolumes.
const listPageSize = 500

// Check validates every SharedVolume in a cluster against the certified SharedVolume CRD. It
// reads only: it has nothing to dry-run.
type Check struct {
	kube.ClusterOptions
	// Output is text, json or yaml (a Report).
	Output string
	Out    io.Writer
}

// Report is a check as data.
type Report struct {
	// Served says whether the cluster serves a SharedVolume API at all.
	Served  bool `json:"served"`
	Checked int  `json:"checked"`
	// Invalid are the SharedVolumes the certified CRD refuses, with every problem.
	Invalid []InvalidSharedVolume `json:"invalid"`
}

// InvalidSharedVolume is a SharedVolume the certified CRD refuses.
type InvalidSharedVolume struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Problems  []string `json:"problems"`
}

// Run lists the SharedVolumes, prints each invalid one with its problems and a summary, and fails
// when any is invalid.
func (c *Check) Run(ctx context.Context) error {
	if err := output.Check(c.Output); err != nil {
		return err
	}
	report, err := c.check(ctx)
	if err != nil {
		return err
	}
	var found error
	if n := len(report.Invalid); n > 0 {
		found = exitcode.Found(fmt.Errorf("%d of %d SharedVolumes are invalid under the certified CRD", n, report.Checked))
	}
	if output.Data(c.Output) {
		if err := output.Write(c.Out, c.Output, report); err != nil {
			return err
		}
		return found
	}
	switch {
	case !report.Served:
		fmt.Fprintf(c.Out, "the cluster serves no SharedVolume API (%s): no SharedVolume to check\n", efs.SharedVolumeCRD)
	case found == nil:
		fmt.Fprintf(c.Out, "every SharedVolume (%d) is valid under the certified CRD\n", report.Checked)
	default:
		for _, sv := range report.Invalid {
			fmt.Fprintf(c.Out, "SharedVolume %s/%s is invalid under the certified CRD:\n", sv.Namespace, sv.Name)
			for _, p := range sv.Problems {
				fmt.Fprintf(c.Out, "  %s\n", p)
			}
		}
		fmt.Fprintf(c.Out, "%d of %d SharedVolumes are invalid under the certified CRD: fix or delete them before upgrading with spec.install.preflight.crdUpgradeSafety.enforcement: None\n", len(report.Invalid), report.Checked)
	}
	return found
}

// check reads every SharedVolume and validates it against the certified CRD.
func (c *Check) check(ctx context.Context) (*Report, error) {
	v, err := NewValidator(crd.SharedVolumes)
	if err != nil {
		return nil, fmt.Errorf("loading the certified SharedVolume CRD: %w", err)
	}
	config, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return Cluster(ctx, config, c.Namespace, v)
}

// Cluster reads every SharedVolume of namespace ("" for all) in the cluster of config and
// validates each with v, as the API server serving v's CRD validates a write of it.
func Cluster(ctx context.Context, config *rest.Config, namespace string, v *Validator) (*Report, error) {
	report := &Report{Invalid: []InvalidSharedVolume{}}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	group, plural := v.CRD.Spec.Group, v.CRD.Spec.Names.Plural
	listVersion, err := versionToList(disco, group, plural, v.Versions())
	if err != nil || listVersion == "" {
		return report, err
	}
	report.Served = true
	items, err := listAll(ctx, dyn.Resource(schema.GroupVersionResource{Group: group, Version: listVersion, Resource: plural}).Namespace(namespace))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	report.Checked = len(items)
	for i := range items {
		sv := &items[i]
		if problems := v.Validate(sv); len(problems) > 0 {
			report.Invalid = append(report.Invalid, InvalidSharedVolume{Namespace: sv.GetNamespace(), Name: sv.GetName(), Problems: problems})
		}
	}
	return report, nil
}

// versionToList returns the version to read the SharedVolumes at, "" when the cluster serves none.
// A version the certified CRD serves comes first: the API server converts every stored object to
// it, so the objects are read as they will be validated after the upgrade. Failing that, the
// cluster's preferred version, whose objects Validate then reports as of a version the certified
// CRD does not serve.
func versionToList(disco discovery.DiscoveryInterface, group, plural string, certified []string) (string, error) {
	groups, err := disco.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("discovering the API groups: %w", err)
	}
	i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == group })
	if i < 0 {
		return "", nil
	}
	g := groups.Groups[i]
	// Preferred first, then in the server's order.
	versions := []string{g.PreferredVersion.Version}
	for _, gv := range g.Versions {
		if gv.Version != g.PreferredVersion.Version {
			versions = append(versions, gv.Version)
		}
	}
	var serving []string
	for _, ver := range versions {
		served, err := kube.Served(disco, group+"/"+ver, plural)
		if err != nil {
			return "", err
		}
		if served {
			serving = append(serving, ver)
		}
	}
	for _, ver := range serving {
		if slices.Contains(certified, ver) {
			return ver, nil
		}
	}
	if len(serving) > 0 {
		return serving[0], nil
	}
	return "", nil
}

func listAll(ctx context.Context, r dynamic.ResourceInterface) ([]unstructured.Unstructured, error) {
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		list, err := r.List(ctx, opts)
		if apierrors.IsNotFound(err) && len(items) == 0 {
			// The CRD went away since discovery: nothing is left to check.
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing SharedVolumes: %w", err)
		}
		items = append(items, list.Items...)
		if list.GetContinue() == "" {
			return items, nil
		}
		opts.Continue = list.GetContinue()
	}
}
