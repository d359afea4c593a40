// Package up is the `csi-olm dev up` verb: a local OLM cluster serving the project's catalogs.
package dev

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/csi-olm/csi-olm/testbed"
)

// Up starts the dev cluster.
type Up struct {
	Home  string
	Level string
	// Node is kwok (a fake node, also when empty) or real (a kubelet node in a network
	// namespace of its own).
	Node string
	// Catalogs maps CatalogSource names to catalog directories to serve.
	Catalogs map[string]string
	Out      io.Writer
}

// ParseCatalogs reads the --catalog NAME=DIR flags; with none, it serves the working directory's
// catalog/community and catalog/certified when they exist.
func ParseCatalogs(flags []string) (map[string]string, error) {
	catalogs := map[string]string{}
	if len(flags) == 0 {
		for name, dir := range map[string]string{"community-operators": "catalog/community", "certified-operators": "catalog/certified"} {
			if _, err := os.Stat(dir); err == nil {
				catalogs[name] = dir
			}
		}
		return catalogs, nil
	}
	for _, f := range flags {
		name, dir, ok := strings.Cut(f, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("--catalog %q: want NAME=DIR", f)
		}
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("--catalog %s: %w", name, err)
		}
		catalogs[name] = dir
	}
	return catalogs, nil
}

// Run starts the cluster and records its state.
func (u *Up) Run(ctx context.Context) error {
	level, err := testbed.ParseLevel(u.Level)
	if err != nil {
		return err
	}
	if len(u.Catalogs) > 0 && level < testbed.OLM {
		return fmt.Errorf("catalogs need OLM: use --level olm")
	}
	if u.Node != "" && u.Node != "kwok" && u.Node != "real" {
		return fmt.Errorf("unknown node %q: use kwok or real", u.Node)
	}
	stateFile := StateFile(u.Home)
	if st, err := ReadState(stateFile); err != nil {
		return err
	} else if st != nil {
		return fmt.Errorf("a dev cluster is already recorded in %s (kubeconfig %s): run `csi-olm dev down` first", stateFile, st.Kubeconfig)
	}
	dir := filepath.Join(u.Home, "dev")
	opts := testbed.Options{
		Level: level, Dir: dir, Detached: true, Registry: true, RealNode: u.Node == "real",
		Logf: func(format string, args ...any) { fmt.Fprintf(u.Out, format+"\n", args...) },
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	tools, err := testbed.FindTools(testbed.NeededTools(opts)...)
	if err != nil {
		return err
	}
	opts.Tools = tools
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	s, err := testbed.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting the dev cluster (logs in %s): %w", filepath.Join(dir, "logs"), err)
	}
	// From here on the state is recorded first, so `dev down` can stop whatever got started.
	if err := s.WriteState(stateFile); err != nil {
		s.Stop()
		return fmt.Errorf("recording the dev cluster: %w", err)
	}
	if err := u.serve(ctx, s, stateFile); err != nil {
		return fmt.Errorf("%w (the cluster is running: `csi-olm dev down` stops it)", err)
	}
	fmt.Fprintf(u.Out, "\ndev cluster (%s) is up in %s\n\n  export KUBECONFIG=%s\n\nimage registry (plain HTTP): %s\nstop it with: csi-olm dev down\n",
		level, time.Since(start).Round(100*time.Millisecond), s.Kubeconfig, s.Registry)
	return nil
}

func (u *Up) serve(ctx context.Context, s *testbed.Stack, stateFile string) error {
	if s.Level < testbed.Full {
		return nil
	}
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{}); err != nil {
		return err
	}
	names := make([]string, 0, len(u.Catalogs))
	for name := range u.Catalogs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if s.Netns() != "" {
			// A real node's OLM reaches catalogs as OperatorHub's: images it runs as pods.
			ref, err := s.PushCatalogImage(ctx, name, u.Catalogs[name])
			if err != nil {
				return err
			}
			if err := s.CreateImageCatalogSource(ctx, testbed.OLMNamespace, name, ref); err != nil {
				return err
			}
			fmt.Fprintf(u.Out, "serving %s as CatalogSource %s/%s from image %s\n", u.Catalogs[name], testbed.OLMNamespace, name, ref)
			continue
		}
		addr, err := s.ServeCatalog(ctx, name, u.Catalogs[name])
		if err != nil {
			return err
		}
		if err := s.WriteState(stateFile); err != nil {
			return err
		}
		if err := s.CreateCatalogSource(ctx, testbed.OLMNamespace, name, addr); err != nil {
			return err
		}
		fmt.Fprintf(u.Out, "serving %s as CatalogSource %s/%s at %s\n", u.Catalogs[name], testbed.OLMNamespace, name, addr)
	}
	if len(names) == 0 && s.Level == testbed.OLM {
		fmt.Fprintln(u.Out, "no catalog to serve (catalog/community and catalog/certified do not exist yet; `make catalog` writes them)")
	}
	return nil
}
