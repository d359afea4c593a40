package subscription

import (
	"context"
	"errors"
	"fmt"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
)

// Upgrade is where OLM takes the installed CSV in a channel of the target catalog: the channel's
// head, the bundles it installs on the way, and the first step's edge. A journal records it.
type Upgrade struct {
	Channel  string   `json:"channel"`
	Channels []string `json:"channels"`
	Head     string   `json:"head"`
	// Path are the CSVs OLM installs one after another, the head last.
	Path []string `json:"path,omitempty"`
	// Edge is the bundle OLM installs first, and Why says through which of its fields.
	Edge string `json:"edge,omitempty"`
	Why  string `json:"why,omitempty"`
}

// noChannel says whether findUpgrade failed on a channel the target's package lacks.
func noChannel(err error) bool {
	var se *predict.StartError
	return errors.As(err, &se) && se.Kind == predict.NoChannel
}

// findUpgrade asks OLM's own resolver, over the target CatalogSource's registry, where a
// Subscription to channel (empty: the package's default) takes the installed operator. It is
// `csi-olm catalog simulate`'s walk, with the registry as its catalog, so both say the same of
// the same catalog. It fails unless OLM reaches the channel's head, saying where and why it
// stops; a channel the package lacks is a *simulate.StartError of kind NoChannel.
func findUpgrade(ctx context.Context, r *olm.Registry, channel string, installed olmresolver.Operator) (*Upgrade, error) {
	sim, err := olmv0.New(ctx, predict.Catalog{Name: r.Source(), Dir: r.Name, Registry: r.Client()})
	if err != nil {
		return nil, fmt.Errorf("reading catalog %s: %w", r.Name, err)
	}
	defer sim.Close()
	p, err := sim.Simulate(ctx, r.Source(), olmv0.Start{CSV: installed.CSV, Package: efs.Package, Channel: channel, Installed: &installed})
	if err != nil {
		return nil, err
	}
	if p.Result != predict.AtHead {
		at := p.End
		if p.End != installed.CSV {
			at = fmt.Sprintf("%s, where it takes the installed %s,", p.End, installed.CSV)
		}
		return nil, fmt.Errorf("OLM would keep %s in channel %s of package %s in catalog %s, short of the channel's head %s: %s",
			at, p.Channel, p.Package, r.Name, p.Head, p.Why())
	}
	up := &Upgrade{Channel: p.Channel, Channels: sim.Index(r.Source()).Package(p.Package).ChannelNames(), Head: p.Head}
	for _, st := range p.Steps {
		up.Path = append(up.Path, st.To)
	}
	if len(p.Steps) > 0 {
		up.Edge, up.Why = p.Steps[0].To, p.Steps[0].By()
	}
	return up, nil
}
