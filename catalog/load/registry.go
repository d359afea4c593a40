package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/pkg/api"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
)

// FromRegistry reads the catalog a running registry serves, as OLM's resolver reads it (one
// bundle per channel entry, with its replaces, skips and skipRange) and as opm renders a
// registry-served index: operator-registry's own conversions from the API's bundles to its model,
// and from its model to the file-based form. Every bundle that does not convert is an error, all
// of them joined.
func FromRegistry(ctx context.Context, c registryclient.Interface) (*declcfg.DeclarativeConfig, error) {
	it, err := c.ListBundles(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the registry's bundles: %w", err)
	}
	m := model.Model{}
	var problems []error
	for b := it.Next(); b != nil; b = it.Next() {
		p, err := registryPackage(ctx, c, m, b.PackageName)
		if err != nil {
			return nil, err
		}
		ch := p.Channels[b.ChannelName]
		if ch == nil {
			problems = append(problems, fmt.Errorf("bundle %s is listed in channel %q, which package %s does not have", b.CsvName, b.ChannelName, p.Name))
			continue
		}
		mb, err := api.ConvertAPIBundleToModelBundle(b)
		if err != nil {
			problems = append(problems, fmt.Errorf("bundle %s of package %s: %w", b.CsvName, p.Name, err))
			continue
		}
		mb.Package, mb.Channel = p, ch
		ch.Bundles[mb.Name] = mb
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("listing the registry's bundles: %w", err)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("reading the registry's catalog: %w", err)
	}
	cfg := declcfg.ConvertFromModel(m)
	return &cfg, nil
}

// ListedOnce is c, but for ListBundles, which streams c's bundles the first time and replays them
// after: a registry behind a port-forward need not send its whole catalog twice to one reader.
func ListedOnce(c registryclient.Interface) registryclient.Interface {
	return &listedOnce{Interface: c}
}

type listedOnce struct {
	registryclient.Interface
	mu      sync.Mutex
	bundles []*api.Bundle
	listed  bool
}

func (l *listedOnce) ListBundles(ctx context.Context) (*registryclient.BundleIterator, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.listed {
		it, err := l.Interface.ListBundles(ctx)
		if err != nil {
			return nil, err
		}
		var bundles []*api.Bundle
		for b := it.Next(); b != nil; b = it.Next() {
			bundles = append(bundles, b)
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
		l.bundles, l.listed = bundles, true
	}
	return registryclient.NewBundleIterator(&replay{bundles: l.bundles}), nil
}

// replay streams bundles already listed.
type replay struct{ bundles []*api.Bundle }

func (r *replay) Recv() (*api.Bundle, error) {
	if len(r.bundles) == 0 {
		return nil, io.EOF
	}
	b := r.bundles[0]
	r.bundles = r.bundles[1:]
	return b, nil
}

// registryPackage is the model's package of that name, asked of the registry the first time.
func registryPackage(ctx context.Context, c registryclient.Interface, m model.Model, name string) (*model.Package, error) {
	if p := m[name]; p != nil {
		return p, nil
	}
	ap, err := c.GetPackage(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("asking the registry for package %s: %w", name, err)
	}
	p := &model.Package{Name: ap.Name, Channels: map[string]*model.Channel{}}
	for _, ch := range ap.Channels {
		p.Channels[ch.Name] = &model.Channel{Package: p, Name: ch.Name, Bundles: map[string]*model.Bundle{}}
	}
	if p.DefaultChannel = p.Channels[ap.DefaultChannelName]; p.DefaultChannel == nil {
		return nil, fmt.Errorf("package %s: the registry names default channel %q, which is not among its channels %v",
			name, ap.DefaultChannelName, slices.Sorted(maps.Keys(p.Channels)))
	}
	m[name] = p
	return p, nil
}
