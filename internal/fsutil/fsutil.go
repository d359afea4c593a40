// Package fsutil replaces generated trees so that readers see the old or the new one, never a mix.
package fsutil

import (
	"errors"
	"fmt"
	"os"
)

// ReplaceDir moves src to dst, putting any existing dst aside first and back if the move fails.
// aside must lie outside any directory the caller removes on failure, so that a failed restore
// never loses the old content.
func ReplaceDir(src, dst, aside string) error {
	hadOld := true
	if err := os.Rename(dst, aside); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("moving %s aside: %w", dst, err)
		}
		hadOld = false
	}
	if err := os.Rename(src, dst); err != nil {
		if hadOld {
			if restoreErr := os.Rename(aside, dst); restoreErr != nil {
				return fmt.Errorf("replacing %s: %w (and restoring it failed: %v; the old content is in %s)", dst, err, restoreErr, aside)
			}
		}
		return fmt.Errorf("replacing %s: %w", dst, err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("removing the previous %s: %w", dst, err)
	}
	return nil
}

// WriteFileAtomic writes a file through a temporary sibling and a rename.
func WriteFileAtomic(path string, content []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, content, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
