package synthcatalog

import (
	"context"
	"fmt"
	"os"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// DropChannel rewrites the file-based catalog in dir without its channel name: the breaking
// change the CI recipe's tests make to a published catalog.
func DropChannel(ctx context.Context, dir, name string) error {
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(dir))
	if err != nil {
		return err
	}
	kept := cfg.Channels[:0]
	for _, ch := range cfg.Channels {
		if ch.Name != name {
			kept = append(kept, ch)
		}
	}
	if len(kept) == len(cfg.Channels) {
		return fmt.Errorf("%s has no channel %s to drop", dir, name)
	}
	cfg.Channels = kept
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return declcfg.WriteFS(*cfg, dir, declcfg.WriteJSON, ".json")
}
