// Package registry talks to image registries for csi-olm's release: it pushes the images the
// project builds and pins every image reference to the digest a registry serves. Mirrors let a
// registry on loopback stand in for quay.io and the others, as an ImageDigestMirrorSet lets a
// disconnected cluster pull from its own registry.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Mirror serves the repositories under Source from Mirror: Source quay.io/csi-olm and Mirror
// 127.0.0.1:5000/csi-olm serve quay.io/csi-olm/x from 127.0.0.1:5000/csi-olm/x.
type Mirror struct {
	Source string
	Mirror string
}

// ParseMirror reads SOURCE=MIRROR.
func ParseMirror(s string) (Mirror, error) {
	source, mirror, ok := strings.Cut(s, "=")
	if !ok {
		return Mirror{}, fmt.Errorf("mirror %q: want SOURCE=MIRROR, e.g. quay.io=127.0.0.1:5000/quay.io", s)
	}
	for _, p := range []string{source, mirror} {
		if _, err := name.NewRepository(p+"/probe", name.StrictValidation); err != nil || p == "" || strings.ContainsAny(p, "@ ") || strings.HasSuffix(p, "/") {
			return Mirror{}, fmt.Errorf("mirror %q: %q is not a registry or repository prefix", s, p)
		}
	}
	return Mirror{Source: source, Mirror: mirror}, nil
}

// Client resolves and pushes images. The zero value uses no mirror.
type Client struct {
	Mirrors []Mirror
	// Options are passed to every registry call (tests shorten the retry backoff with them).
	Options []remote.Option
	// Progress, when set, hears of each push and pin as it starts and ends: the lines a person
	// watching a release reads on stderr.
	Progress io.Writer
}

// progress writes a line of progress, when anyone listens.
func (c *Client) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// Location is where ref is fetched from: the mirror of its repository, when one matches.
func (c *Client) Location(ref string) (name.Reference, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("image %s: not an image reference: %w", ref, err)
	}
	repo := named.Name()
	best := -1
	for i, m := range c.Mirrors {
		if (repo == m.Source || strings.HasPrefix(repo, m.Source+"/")) && (best < 0 || len(m.Source) > len(c.Mirrors[best].Source)) {
			best = i
		}
	}
	if best >= 0 {
		repo = c.Mirrors[best].Mirror + strings.TrimPrefix(repo, c.Mirrors[best].Source)
	}
	switch r := named.(type) {
	case reference.Digested:
		return name.NewDigest(repo + "@" + r.Digest().String())
	case reference.Tagged:
		return name.NewTag(repo + ":" + r.Tag())
	}
	return nil, fmt.Errorf("image %s: has neither a tag nor a digest, so it could be anything", ref)
}

// Want is an image to pin and the platforms it must run on: a single image must be built for the
// only one, a manifest list must hold them all.
type Want struct {
	Ref       string
	Platforms []v1.Platform
}

// Pin returns ref as repository@digest, with the repository as written and the digest the
// registry serves for it, after checking that it runs on platforms.
func (c *Client) Pin(ctx context.Context, ref string, platforms ...v1.Platform) (string, error) {
	loc, err := c.Location(ref)
	if err != nil {
		return "", err
	}
	desc, err := remote.Get(loc, c.options(ctx)...)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", describe(ref, loc), err)
	}
	if err := checkPlatforms(ref, desc, platforms); err != nil {
		return "", err
	}
	named, _ := reference.ParseNormalizedNamed(ref)
	return named.Name() + "@" + desc.Digest.String(), nil
}

// PinAll pins every wanted image, concurrently, and reports every one that fails. An image
// wanted twice must run on the platforms of both.
func (c *Client) PinAll(ctx context.Context, wants []Want) (map[string]string, error) {
	platforms := map[string][]v1.Platform{}
	for _, w := range wants {
		for _, p := range w.Platforms {
			if !slices.ContainsFunc(platforms[w.Ref], p.Equals) {
				platforms[w.Ref] = append(platforms[w.Ref], p)
			}
		}
		if _, ok := platforms[w.Ref]; !ok {
			platforms[w.Ref] = nil
		}
	}
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		pinned = map[string]string{}
		errs   []error
		slots  = make(chan struct{}, 8)
	)
	c.progress("pinning %d images by digest", len(platforms))
	done := 0
	for ref, ps := range platforms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			p, err := c.Pin(ctx, ref, ps...)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			pinned[ref] = p
			done++
			c.progress("pinned %s (%d of %d)", p, done, len(platforms))
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
		return nil, fmt.Errorf("%d of %d images cannot be pinned:\n%w", len(errs), len(platforms), errors.Join(errs...))
	}
	return pinned, nil
}

// Artifact is what Push writes: a v1.Image or a v1.ImageIndex.
type Artifact interface {
	Digest() (v1.Hash, error)
}

// Push writes an image or an image index under ref (a tag, through the mirrors) and returns ref's
// repository pinned to the digest the registry reports. It then pulls the manifest back by that
// digest, so a registry that stored something else than what was pushed fails the push.
func (c *Client) Push(ctx context.Context, ref string, a Artifact) (string, error) {
	loc, err := c.Location(ref)
	if err != nil {
		return "", err
	}
	want, err := a.Digest()
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	c.progress("pushing %s", describe(ref, loc))
	switch a := a.(type) {
	case v1.ImageIndex:
		err = remote.WriteIndex(loc, a, c.options(ctx)...)
	case v1.Image:
		err = remote.Write(loc, a, c.options(ctx)...)
	default:
		err = fmt.Errorf("%T is neither an image nor an image index", a)
	}
	if err != nil {
		return "", fmt.Errorf("push image %s: %w", describe(ref, loc), err)
	}
	served, err := remote.Head(loc, c.options(ctx)...)
	if err != nil {
		return "", fmt.Errorf("image %s: read back after the push: %w", describe(ref, loc), err)
	}
	if served.Digest != want {
		return "", fmt.Errorf("image %s: the registry serves %s for it, but %s was pushed", describe(ref, loc), served.Digest, want)
	}
	if _, err := remote.Get(loc.Context().Digest(want.String()), c.options(ctx)...); err != nil {
		return "", fmt.Errorf("image %s: pull back %s: %w", describe(ref, loc), want, err)
	}
	named, _ := reference.ParseNormalizedNamed(ref)
	return named.Name() + "@" + want.String(), nil
}

func (c *Client) options(ctx context.Context) []remote.Option {
	// Credentials come from where podman, skopeo and docker keep them (REGISTRY_AUTH_FILE,
	// containers/auth.json, ~/.docker/config.json); a registry with none is read anonymously.
	return append([]remote.Option{remote.WithContext(ctx), remote.WithTransport(http.DefaultTransport),
		remote.WithAuthFromKeychain(authn.DefaultKeychain)}, c.Options...)
}

// checkPlatforms makes sure the image runs on every one of platforms.
func checkPlatforms(ref string, desc *remote.Descriptor, platforms []v1.Platform) error {
	if len(platforms) == 0 {
		return nil
	}
	var have []v1.Platform
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		manifest, err := idx.IndexManifest()
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		for _, m := range manifest.Manifests {
			if m.Platform != nil {
				have = append(have, *m.Platform)
			}
		}
	} else {
		img, err := desc.Image()
		if err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return fmt.Errorf("image %s: read its config: %w", ref, err)
		}
		have = append(have, *cfg.Platform())
	}
	var missing []string
	for _, want := range platforms {
		if !slices.ContainsFunc(have, func(p v1.Platform) bool { return p.Satisfies(want) }) {
			missing = append(missing, want.String())
		}
	}
	if len(missing) > 0 {
		kind := "the image is built"
		if desc.MediaType.IsIndex() {
			kind = "the manifest list has images"
		}
		return fmt.Errorf("image %s: %s for %s, not for %s", ref, kind, platformList(have), strings.Join(missing, ", "))
	}
	return nil
}

func platformList(ps []v1.Platform) string {
	if len(ps) == 0 {
		return "no platform"
	}
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}

// describe names an image and, when it differs, where it was fetched from.
func describe(ref string, loc name.Reference) string {
	if loc.Name() == ref {
		return ref
	}
	return fmt.Sprintf("%s (from %s)", ref, loc.Name())
}
