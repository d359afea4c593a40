// Package dev keeps the state of the local development cluster that `csi-olm dev up` starts and
// `csi-olm dev down` stops. The cluster's processes outlive the command that started them.
package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/csi-olm/csi-olm/testbed"
)

// Home is where the dev cluster keeps its state file and directory.
func Home() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "csi-olm")
}

// StateFile is the path of the running dev cluster's state under home.
func StateFile(home string) string { return filepath.Join(home, "dev.json") }

// ReadState returns the recorded dev cluster, or nil when none is recorded.
func ReadState(path string) (*testbed.State, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st testbed.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("%s is not a dev cluster state file: %w", path, err)
	}
	return &st, nil
}
