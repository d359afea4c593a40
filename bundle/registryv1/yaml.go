package registryv1

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// manifestYAML serializes a typed API object the way it is committed: keys sorted, no status, and
// none of the null creationTimestamps that typed objects carry when they were never stored.
func manifestYAML(obj any) ([]byte, error) {
	m, err := manifestMap(obj)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(m)
}

func manifestMap(obj any) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", obj, err)
	}
	delete(m, "status")
	dropNullTimestamps(m)
	return m, nil
}

func dropNullTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, child := range t {
			dropNullTimestamps(child)
		}
	case []any:
		for _, child := range t {
			dropNullTimestamps(child)
		}
	}
}
