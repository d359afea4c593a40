// Package build assembles the project's container images without a daemon: the operator image
// from a statically linked binary, a bundle image from a bundle directory, and a catalog image
// from a file-based catalog and opm. Every image is reproducible: the same inputs give the same
// digest, because tar entries are sorted, owned by root and dated at the Unix epoch, and the
// image config carries the same fixed date.
package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
)

// Epoch dates every file and image: a build date would make two builds of the same source differ.
var Epoch = time.Unix(0, 0).UTC()

// File is one regular file of a layer, or a directory when Mode has fs.ModeDir (a directory that
// must exist with its own mode, such as a world-writable /tmp).
type File struct {
	// Path is absolute in the image, e.g. /usr/bin/opm.
	Path string
	Mode fs.FileMode
	Data []byte
	// Link, when set, makes Path a symbolic link to it, and Mode and Data are unused.
	Link string
}

// tarMode is the tar header mode of fs mode bits: the permissions and the sticky bit.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// CopyFS lists the regular files of fsys under root, placed under dest in the image; their mode
// is 0644, or 0755 when executable is true.
func CopyFS(fsys fs.FS, root, dest string, executable bool) ([]File, error) {
	var files []File
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files go into an image, this is %s", p, d.Type())
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		mode := fs.FileMode(0o644)
		if executable {
			mode = 0o755
		}
		files = append(files, File{Path: path.Join(dest, rel), Mode: mode, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	return files, nil
}

// Layer packs files into one gzip-compressed OCI layer, with the parent directories of every
// file, in sorted order.
func Layer(files []File) (v1.Layer, error) {
	dirs := map[string]bool{}
	byPath := map[string]File{}
	for _, f := range files {
		clean := path.Clean("/" + f.Path)
		if _, dup := byPath[clean]; dup {
			return nil, fmt.Errorf("layer: %s is listed twice", clean)
		}
		byPath[clean] = f
		for d := path.Dir(clean); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var names []string
	for d := range dirs {
		if _, clash := byPath[d]; clash {
			return nil, fmt.Errorf("layer: %s is both a file and a directory", d)
		}
		names = append(names, d)
	}
	for p := range byPath {
		names = append(names, p)
	}
	slices.Sort(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		hdr := &tar.Header{Name: strings.TrimPrefix(name, "/"), ModTime: Epoch}
		f, listed := byPath[name]
		isFile := listed && f.Link == "" && !f.Mode.IsDir()
		switch {
		case listed && f.Link != "":
			hdr.Typeflag, hdr.Mode, hdr.Linkname = tar.TypeSymlink, 0o777, f.Link
		case isFile:
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, tarMode(f.Mode), int64(len(f.Data))
		case listed:
			hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, tarMode(f.Mode), hdr.Name+"/"
		default:
			hdr.Typeflag, hdr.Mode, hdr.Name = tar.TypeDir, 0o755, hdr.Name+"/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", name, err)
		}
		if isFile {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("layer: %s: %w", name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	// Compressed here, once, and kept: given an uncompressed tar, go-containerregistry compresses
	// it again for every push and layout write, with the standard library's gzip, and an operator
	// or opm layer is tens of megabytes. klauspost/compress writes the same format several times
	// faster; its output, like the tar, depends only on the files.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("layer: compress: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("layer: compress: %w", err)
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
