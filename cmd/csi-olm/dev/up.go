//go:build linux

package dev

import (
	"fmt"
	"maps"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/testbed"
	"github.com/csi-olm/csi-olm/testbed/dev"
)

func newUp() *cobra.Command {
	u := &dev.Up{}
	var catalogs []string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster with OLM, serving the project's catalogs",
		Long: `Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (one fake Ready
node) and OLM as local processes on loopback, installs the OpenShift APIs and singletons the operators read,
serves each catalog with opm and creates a CatalogSource for it in the olm namespace, starts an
image registry on loopback (plain HTTP), then prints the KUBECONFIG to use and the registry's
address. The cluster keeps running until ` + "`csi-olm dev down`" + `.

With --node=real the cluster runs in a network namespace of its own with a real kubelet node;
pods pull their images from the registry (quay.io/..., registry.k8s.io/... and the other
upstreams under <registry>/<upstream>/...), and the catalogs are served as catalog images that
OLM runs as registry pods.

By default the catalogs catalog/community and catalog/certified of the working directory are
served, as CatalogSources community-operators and certified-operators, when they exist. A tree
of per-minor catalogs (catalog/<source>/v4.N) is served by its newest minor's catalog.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u.Out = cmd.OutOrStdout()
			var err error
			if u.Catalogs, err = dev.ParseCatalogs(catalogs); err != nil {
				return err
			}
			if u.Catalogs, err = newestMinors(u.Catalogs); err != nil {
				return err
			}
			return u.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&u.Home, "home", dev.Home(), "directory for the cluster's state and data")
	cmd.Flags().StringVar(&u.Level, "level", testbed.OLM.String(), "how much to run: apiserver, full or olm")
	cmd.Flags().StringVar(&u.Node, "node", "kwok", "the node of a full or olm cluster: kwok (fake, pods never run) or real (kubelet, containerd and kube-proxy in a network namespace of their own, pods running images from the registry; needs root)")
	cmd.Flags().StringArrayVar(&catalogs, "catalog", nil, "NAME=DIR: serve DIR as CatalogSource NAME (repeatable; replaces the defaults)")
	return cmd
}

// newestMinors serves a tree of per-minor catalogs by the catalog of its newest minor, the minor
// the dev cluster runs; a catalog directory as it is.
func newestMinors(catalogs map[string]string) (map[string]string, error) {
	out := maps.Clone(catalogs)
	for name, dir := range catalogs {
		if !tree.IsTree(dir) {
			continue
		}
		t, err := tree.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("--catalog %s: %w", name, err)
		}
		out[name] = t.Path(t.Minors[len(t.Minors)-1])
	}
	return out, nil
}
