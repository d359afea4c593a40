package migration

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// CheckFormat accepts the plan formats of the migrate verbs.
func CheckFormat(format string) error {
	switch format {
	case "text", "yaml", "json":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use text, yaml or json", format)
}

// Encode writes a plan as yaml or json.
func Encode(out io.Writer, format string, plan any) error {
	raw, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the plan: %w", err)
	}
	if format == "yaml" {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return fmt.Errorf("encoding the plan: %w", err)
		}
	}
	_, err = fmt.Fprintln(out, string(raw))
	return err
}
