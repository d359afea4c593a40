// Package output writes a verb's report as data, in the formats every csi-olm verb that reports
// findings takes with -o: json or yaml, beside its text.
package output

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/option"
)

// Check refuses a format other than text, json and yaml, naming the Output option.
func Check(format string) error {
	switch format {
	case "", "text", "json", "yaml":
		return nil
	}
	return option.Errorf("Output", "unknown output %q: use text, json or yaml", format)
}

// Data says whether format is one of the data formats, which Write writes, rather than text.
func Data(format string) bool { return format == "json" || format == "yaml" }

// Text is where a verb's text report goes: out, or nowhere when format is a data format, whose
// report Write writes once the verb is done.
func Text(out io.Writer, format string) io.Writer {
	if Data(format) {
		return io.Discard
	}
	return out
}

// Write writes v as format, json (indented) or yaml.
func Write(out io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		raw, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("writing the report as YAML: %w", err)
		}
		_, err = out.Write(raw)
		return err
	}
	return fmt.Errorf("no data format %q", format)
}
