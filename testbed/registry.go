package testbed

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/yaml"
)

// registryConfig is the part of the distribution registry's configuration the stack sets.
type registryConfig struct {
	Version string `json:"version"`
	Log     struct {
		Level string `json:"level"`
	} `json:"log"`
	Storage struct {
		Filesystem struct {
			RootDirectory string `json:"rootdirectory"`
		} `json:"filesystem"`
		Delete struct {
			Enabled bool `json:"enabled"`
		} `json:"delete"`
	} `json:"storage"`
	HTTP struct {
		Addr string `json:"addr"`
	} `json:"http"`
}

// RegistryStorage is the directory the stack's registry keeps its images in.
func (s *Stack) RegistryStorage() string {
	if s.opts.RegistryStorage != "" {
		return s.opts.RegistryStorage
	}
	return filepath.Join(s.Dir, "registry")
}

// startRegistry runs the CNCF distribution registry on a free loopback port, over plain HTTP,
// storing its blobs in the stack's directory, and waits until it answers the registry API.
func (s *Stack) startRegistry(ctx context.Context) error {
	if s.opts.Tools.Registry == "" {
		return fmt.Errorf("no registry binary: hack/tools.sh registry builds it")
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	var cfg registryConfig
	cfg.Version = "0.1"
	cfg.Log.Level = "warn"
	cfg.Storage.Filesystem.RootDirectory = s.RegistryStorage()
	cfg.Storage.Delete.Enabled = true
	cfg.HTTP.Addr = "127.0.0.1:" + strconv.Itoa(port)
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	path := filepath.Join(s.Dir, "registry.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return fmt.Errorf("writing the registry's configuration: %w", err)
	}
	// Without it the registry sends its traces to an OpenTelemetry collector on localhost:4318.
	p, err := s.start("registry", []string{"OTEL_TRACES_EXPORTER=none"}, s.opts.Tools.Registry, "serve", path)
	if err != nil {
		return err
	}
	url := "http://" + cfg.HTTP.Addr + "/v2/"
	if err := poll(ctx, p, "the registry at "+url, func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, url, "") }); err != nil {
		return err
	}
	s.Registry = cfg.HTTP.Addr
	return nil
}
