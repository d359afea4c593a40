package diff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/option"
)

// runTrees diffs two trees of per-minor catalogs minor by minor: each minor's index is a
// catalog of its own, whose users are the clusters at that minor. A minor the old tree has and
// the new one lacks leaves those clusters without a catalog, which is breaking.
func (d *Diff) runTrees(ctx context.Context) error {
	if d.Output != "text" {
		return option.Errorf("Output", "two trees of per-minor catalogs are reported as text; for %s, compare one minor's catalogs", d.Output)
	}
	var trees [2]*tree.Tree
	for i, dir := range []string{d.Old, d.New} {
		if !tree.IsTree(dir) {
			return fmt.Errorf("%s is one catalog, but the other is a tree of per-minor catalogs: compare a tree with a tree, or one minor's catalogs", dir)
		}
		t, err := tree.Open(dir)
		if err != nil {
			return err
		}
		trees[i] = t
	}
	old, cur := trees[0], trees[1]
	minors := slices.Clone(old.Minors)
	for _, m := range cur.Minors {
		if !old.Has(m) {
			minors = append(minors, m)
		}
	}
	slices.SortFunc(minors, openshift.Minor.Compare)
	var failed []string
	for _, m := range minors {
		switch {
		case !cur.Has(m):
			fmt.Fprintf(d.Out, "%s -> %s\n  ! the %s catalog is gone: clusters at %s that installed from it have no catalog to upgrade from\n",
				old.Path(m), d.New, m.Index(), m)
			failed = append(failed, fmt.Sprintf("the %s catalog is gone", m.Index()))
		case !old.Has(m):
			fmt.Fprintf(d.Out, "%s -> %s\n  + the %s catalog is new\n", d.Old, cur.Path(m), m.Index())
		default:
			one := *d
			one.Old, one.New = old.Path(m), cur.Path(m)
			if err := one.Run(ctx); err != nil {
				if !d.Breaking {
					return err
				}
				failed = append(failed, err.Error())
			}
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}
