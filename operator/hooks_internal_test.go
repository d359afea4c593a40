package operator

import (
	"io/fs"
	"testing"
)

func TestFIPSEnabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		err     error
		want    string
	}{
		{"a kernel in FIPS mode", "1\n", nil, "true"},
		{"a kernel not in FIPS mode", "0\n", nil, "false"},
		{"a kernel without the file", "", fs.ErrNotExist, "false"},
		{"a file that says something else", "yes\n", nil, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if name != fipsEnabledFile {
					t.Errorf("read %s, want %s", name, fipsEnabledFile)
				}
				return []byte(tc.content), tc.err
			}
			if got := fipsEnabled(read); got != tc.want {
				t.Errorf("fipsEnabled = %q, want %q", got, tc.want)
			}
		})
	}
}
