package version

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// Print is the action of `csi-olm version`: it prints the build information.
type Print struct {
	Output string
	Out    io.Writer
}

// Run prints the version.
func (v *Print) Run(_ context.Context) error {
	info := Get()
	switch v.Output {
	case "json":
		enc := json.NewEncoder(v.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	case "text":
		fmt.Fprintf(v.Out, "version:  %s\n", info.Version)
		if info.Commit != "" {
			fmt.Fprintf(v.Out, "commit:   %s\n", info.Commit)
		}
		fmt.Fprintf(v.Out, "go:       %s\nplatform: %s\n", info.GoVersion, info.Platform)
		deps := make([]string, 0, len(info.Dependencies))
		for d := range info.Dependencies {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			fmt.Fprintf(v.Out, "%s %s\n", d, info.Dependencies[d])
		}
		return nil
	default:
		return fmt.Errorf("unknown output format %q: use text or json", v.Output)
	}
}
