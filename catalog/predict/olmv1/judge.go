package olmv1

import (
	"context"
	"errors"
	"fmt"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/predict"
)

// Judge asks operator-controller's rule where a ClusterExtension goes from each bundle of the
// ClusterCatalog OldCatalog: Old resolves over it, New over its next version, each beside the
// same other ClusterCatalogs.
type Judge struct {
	Old, New   *Resolver
	OldCatalog string
}

// Wording names operator-controller in reports.
func (Judge) Wording() predict.Wording {
	return predict.Wording{OLM: "operator-controller", Users: "ClusterExtensions", Head: "latest", V1: true}
}

// Outcomes implements predict.Judge.
func (j Judge) Outcomes(ctx context.Context, pkg, channel, bundle string) (before, after predict.Outcome, ok bool, err error) {
	var b *index.Bundle
	if p := j.Old.Index(j.OldCatalog).Package(pkg); p != nil {
		b = p.Bundles[bundle]
	}
	if b == nil || b.Version == nil {
		// A channel entry without its bundle, or a bundle without a version: nothing a
		// ClusterExtension can have installed.
		return before, after, false, nil
	}
	req := Request{Package: pkg, Installed: &Installed{Name: bundle, Version: b.Version.String()}}
	if channel != "" {
		req.Channels = []string{channel}
	}
	var out [2]predict.Outcome
	for i, r := range []*Resolver{j.Old, j.New} {
		path, err := r.Walk(ctx, req, j.OldCatalog)
		var se *SpecError
		if errors.As(err, &se) {
			// A package or channel name the API server refuses: no ClusterExtension names it.
			return before, after, false, nil
		}
		if err != nil {
			return before, after, false, fmt.Errorf("asking operator-controller's rule about %s %s: %w", bundle, channelWhere(channel), err)
		}
		out[i] = predict.Outcome{Result: path.Result, End: path.End, EndVersion: path.EndSemver(), Why: path.Why(), Head: path.Latest, HeadVersion: path.LatestSemver()}
	}
	return out[0], out[1], true, nil
}

func channelWhere(channel string) string {
	if channel == "" {
		return "in any channel"
	}
	return "in channel " + channel
}
